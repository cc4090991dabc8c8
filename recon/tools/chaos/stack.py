"""The scratch stack `recon chaos` breaks: its own Postgres and Temporal dev server in a temp dir on
free ports, and a fleet of real `recon worker` processes it can kill, freeze and replace.

Two nights run on it side by side without seeing each other: each has its own Postgres database
and its own Temporal namespace, so both can use the *same* date and warehouse (the seeded night,
its invoice numbers and its keys are then identical) and differ only in what happened to them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from recon.runtime.embedded import EmbeddedPostgres, TemporalDevServer, free_port
from recon.runtime.imap_server import DovecotServer

NIGHTS = ("control", "chaos")


def _die_with_parent() -> None:
    """A worker gets SIGKILL when `recon chaos` dies however it dies, so none is left behind."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class ScratchStack:
    """Servers that live in a temp dir and vanish with it."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="recon-chaos-")))
    postgres: EmbeddedPostgres | None = None
    temporal: TemporalDevServer | None = None
    # other servers of the run (a night's Tryton with --ledger tryton): stopped by close()
    extra: list[subprocess.Popen] = field(default_factory=list)
    mail: DovecotServer | None = None  # `recon chaos --sources`: the nights' mail server

    def start(self) -> None:
        self.postgres = EmbeddedPostgres(self.root)
        self.postgres.start()
        # persistent: the server's history must survive its own restart mid-run.
        self.temporal = TemporalDevServer(self.root, port=free_port(), ui_port=free_port(),
                                          persistent=True, namespaces=NIGHTS)
        self.temporal.start()

    def database_url(self, night: str) -> str:
        assert self.postgres is not None
        base, _, query = self.postgres.url.partition("?")
        return f"{base.rsplit('/', 1)[0]}/{night}" + (f"?{query}" if query else "")

    def kill_temporal(self) -> None:
        assert self.temporal is not None
        self.temporal.kill()

    def start_temporal(self) -> None:
        assert self.temporal is not None
        self.temporal.start()

    def stop_postgres(self) -> None:
        assert self.postgres is not None
        self.postgres.stop(mode="immediate")

    def start_postgres(self) -> None:
        assert self.postgres is not None
        self.postgres.start_again()

    def close(self) -> None:
        """Stop everything and delete the temp dir; safe to call twice and after a failed start."""
        for server in self.extra:
            with contextlib.suppress(Exception):
                server.terminate()
                server.wait(15)
        if self.mail is not None:
            with contextlib.suppress(Exception):
                self.mail.stop()
        if self.temporal is not None:
            with contextlib.suppress(Exception):
                self.temporal.stop()
        if self.postgres is not None:
            with contextlib.suppress(Exception):
                self.postgres.stop(mode="immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class Worker:
    name: str
    process: subprocess.Popen
    log: Path
    frozen_until: float = 0.0
    is_ready: bool = False

    def ready(self) -> bool:
        """Has it connected and started polling? (Importing and connecting takes seconds.)"""
        if not self.is_ready and self.alive():
            self.is_ready = b"worker started" in self.log.read_bytes()
        return self.is_ready

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None


@dataclass
class WorkerFleet:
    """`size` real worker processes on one night's namespace and task queue, topped up on demand."""

    env: dict[str, str]
    logs: Path
    size: int = 2
    workers: list[Worker] = field(default_factory=list)
    started: int = 0

    def spawn(self) -> Worker:
        self.started += 1
        name = f"worker-{self.started}"
        log = self.logs / f"{name}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "recon.cli", "worker"], env=self.env,
            stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches `recon chaos` only; it stops the workers
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        worker = Worker(name, process, log)
        self.workers.append(worker)
        return worker

    def live(self) -> list[Worker]:
        return [w for w in self.workers if w.alive()]

    def awake(self) -> list[Worker]:
        return [w for w in self.live() if not w.frozen_until]

    def serving(self) -> list[Worker]:
        """Awake and polling: the workers worth killing or freezing."""
        return [w for w in self.awake() if w.ready()]

    async def wait_ready(self, timeout: float = 120) -> None:
        import asyncio

        deadline = time.monotonic() + timeout
        while len(self.serving()) < self.size:
            if time.monotonic() > deadline:
                raise TimeoutError("workers did not start")
            self.exited()
            self.top_up()
            await asyncio.sleep(0.2)

    def exited(self) -> list[Worker]:
        """Workers that died on their own since the last call (e.g. could not reach a server)."""
        gone = [w for w in self.workers if not w.alive()]
        self.workers = self.live()
        return gone

    def top_up(self) -> list[Worker]:
        """Always keep `size` awake workers, so the run can finish whatever was done to the rest."""
        return [self.spawn() for _ in range(self.size - len(self.awake()))]

    def kill(self, worker: Worker) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.pid, signal.SIGKILL)
        worker.process.wait(10)
        self.workers.remove(worker)

    def freeze(self, worker: Worker, seconds: float) -> None:
        os.kill(worker.pid, signal.SIGSTOP)
        worker.frozen_until = time.monotonic() + seconds

    def thaw_due(self) -> list[Worker]:
        due = [w for w in self.workers if w.frozen_until and w.frozen_until <= time.monotonic()]
        for worker in due:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGCONT)
            worker.frozen_until = 0.0
        return due

    def thaw_all(self) -> list[Worker]:
        for worker in self.workers:
            if worker.frozen_until:
                worker.frozen_until = time.monotonic()
        return self.thaw_due()

    def close(self) -> None:
        for worker in self.workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGCONT)
                os.kill(worker.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.process.wait(10)
        self.workers = []
