"""CPU seconds of the three parts of a night (Python workers, Temporal server, Postgres), sampled
over time so a step's share can be read off between its first and last history event.

Linux only: it reads /proc/<pid>/stat. Postgres forks a backend per connection; a backend that
exited is counted in the postmaster's cutime/cstime (the postmaster waits for it), a live one is
read directly, so the sum covers every Postgres process that ever ran.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int, with_children: bool = False) -> float:
    """CPU seconds of one process (and of its waited-for children), 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0
    # fields[11..14] are utime, stime, cutime, cstime (stat fields 14-17)
    ticks = int(fields[11]) + int(fields[12])
    if with_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / _TICK


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def process_cpu(pid: int) -> float:
    return _stat(pid)


def tree_cpu(pid: int) -> float:
    """A server that forks (Postgres): itself, its exited children, its live children."""
    return _stat(pid, with_children=True) + sum(_stat(c) for c in _children(pid))


def postmaster_pid(datadir: str) -> int:
    with open(os.path.join(datadir, "postmaster.pid")) as f:
        return int(f.readline())


@dataclass
class CpuSampler:
    """Samples (wall time, python, temporal, postgres) CPU seconds every `every` seconds."""

    python: Callable[[], float]
    temporal: Callable[[], float]
    postgres: Callable[[], float]
    every: float = 0.25
    samples: list[tuple[float, float, float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> None:
        self.samples.append((time.time(), self.python(), self.temporal(), self.postgres()))

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def __enter__(self) -> CpuSampler:
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="cpu-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    def at(self, when: float) -> tuple[float, float, float]:
        """Cumulative CPU (python, temporal, postgres) at wall time `when`, interpolated."""
        times = [s[0] for s in self.samples]
        i = bisect.bisect_left(times, when)
        if i <= 0:
            return self.samples[0][1:]
        if i >= len(self.samples):
            return self.samples[-1][1:]
        (t0, *a), (t1, *b) = self.samples[i - 1], self.samples[i]
        share = (when - t0) / (t1 - t0) if t1 > t0 else 1.0
        return tuple(x + (y - x) * share for x, y in zip(a, b, strict=True))  # type: ignore[return-value]

    def between(self, start: float, end: float) -> tuple[float, float, float]:
        a, b = self.at(start), self.at(end)
        return tuple(y - x for x, y in zip(a, b, strict=True))  # type: ignore[return-value]
