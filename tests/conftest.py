"""Real parts, really run: the session's servers, started by the fixtures that need them.

`database` starts one embedded Postgres (all `tests/store/` needs); `stack` adds one Temporal dev
server (`tests/system/`); `spawn_worker` starts real worker processes a test can kill. Nothing here
is autouse: each folder's conftest sets the environment its tier runs in, so `tests/unit/` starts
no server at all. Each test uses its own warehouse and task queue, so tests never see each
other's runs."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio
from temporalio.client import Client

from recon.runtime.config import load_settings
from recon.runtime.embedded import EmbeddedPostgres, TemporalDevServer, free_port
from recon.runtime.temporal_client import connect
from recon.store.db import connect_pool, migrate
from tests import approvers
from tests.helpers import ROOT, TEST_PAYLOAD_KEYS, keyring_for_tests

_names = itertools.count(1)


def pytest_report_header() -> str:
    ring = keyring_for_tests()
    if ring is None:
        return "payloads not encrypted (RECON_TEST_PAYLOAD_KEYS unset)"
    return f"payloads encrypted: {ring!r}"


@dataclass(frozen=True)
class Stack:
    database_url: str
    temporal_address: str
    state: Path
    postgres: EmbeddedPostgres | None = None  # for the outage tests, which stop and restart it

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "OPENAI_"))}
        env.update(
            DATABASE_URL=self.database_url,
            TEMPORAL_ADDRESS=self.temporal_address,
            RECON_HOME=str(self.state / "home"),
            # decisions are signed: commands a test runs sign as asha (tests/approvers.py)
            RECON_APPROVER_KEY=str(approvers.key_path(self.state, "asha")),
            PYTHONUNBUFFERED="1",
        )
        if TEST_PAYLOAD_KEYS:  # the suite run with encryption on (tests/helpers.py)
            env["RECON_PAYLOAD_KEYS"] = TEST_PAYLOAD_KEYS
        env.update(extra)
        return env


@dataclass(frozen=True)
class Database:
    """The session's embedded Postgres: what the store tests need, and all of it."""

    url: str
    state: Path
    server: EmbeddedPostgres


@pytest.fixture(scope="session")
def database() -> Iterator[Database]:
    state = Path(tempfile.mkdtemp(prefix="recon-test-"))
    postgres = EmbeddedPostgres(state)
    url = postgres.start()
    approvers.make_keys(state)
    try:
        yield Database(url, state, postgres)
    finally:
        postgres.stop()
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def stack(database: Database) -> Iterator[Stack]:
    """Postgres and a Temporal dev server: started only for the tests that ask for them."""
    temporal = TemporalDevServer(database.state, port=free_port(), ui_port=free_port(), persistent=False)
    temporal.start()
    try:
        yield Stack(database.url, temporal.address, database.state, database.server)
    finally:
        # Reap our own child first: TemporalDevServer.stop() polls the pid with kill(pid, 0),
        # which an unreaped (zombie) child passes, so it waited its full 10 s every session.
        if temporal.process is not None and temporal.process.poll() is None:
            temporal.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                temporal.process.wait(10)
        temporal.stop()


def clean_environment(monkeypatch: pytest.MonkeyPatch, **servers: str) -> None:
    """No RECON_/OPENAI_ variables from the caller's shell; only the servers this tier started."""
    for key in list(os.environ):
        if key.startswith(("RECON_", "OPENAI_")) or key in ("DATABASE_URL", "TEMPORAL_ADDRESS",
                                                            "TEMPORAL_NAMESPACE"):
            monkeypatch.delenv(key)
    for key, value in servers.items():
        monkeypatch.setenv(key, value)


@pytest_asyncio.fixture(scope="session")
async def pool(database: Database) -> AsyncIterator[asyncpg.Pool]:
    pool = await connect_pool(database.url, max_size=20)
    await migrate(pool)
    await approvers.register(pool, database.state)
    yield pool
    await pool.close()


@pytest_asyncio.fixture(scope="session")
async def client(stack: Stack) -> Client:
    # Made before the per-test environment is: the keyring is given, not read from it.
    return await connect(replace(load_settings(), temporal_address=stack.temporal_address,
                                 payload_keyring=keyring_for_tests()))


@pytest.fixture
def night() -> tuple[str, str, str]:
    """A fresh (business date, warehouse, task queue) for one test."""
    n = next(_names)
    return "2026-10-13", f"t{os.getpid()}w{n}", f"q{os.getpid()}-{n}"


@dataclass
class WorkerProcess:
    process: subprocess.Popen
    log: Path

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def freeze(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    async def wait_exit(self, timeout: float) -> int:
        for _ in range(int(timeout * 20)):
            code = self.process.poll()
            if code is not None:
                return code
            await asyncio.sleep(0.05)
        raise AssertionError(f"worker did not exit within {timeout}s:\n{self.output()[-2000:]}")


@pytest.fixture
def spawn_worker(stack: Stack, tmp_path: Path) -> Iterator:
    """Start a real `recon worker` process; every one started is stopped at the end."""
    started: list[WorkerProcess] = []

    def spawn(task_queue: str, **env: str) -> WorkerProcess:
        log = tmp_path / f"worker-{len(started)}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "recon.cli", "worker"],
            cwd=ROOT, env=stack.env(RECON_TASK_QUEUE=task_queue, **env),
            stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        worker = WorkerProcess(process, log)
        started.append(worker)
        return worker

    yield spawn
    for worker in started:
        if worker.process.poll() is None:
            worker.thaw()
            worker.kill()


from tests.fakes.dovecot import imap_account, imap_server  # noqa: E402,F401  (fixtures for all tests)
