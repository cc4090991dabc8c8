"""Small helpers shared by the tests: start a night, run an in-process worker, read the ledger."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import asyncpg
from temporalio.client import Client, WorkflowHandle

from recon.runtime.config import Settings, load_settings
from recon.runtime.keyring import Keyring, keyring_from, new_key_line

ROOT = Path(__file__).resolve().parent.parent

# `RECON_TEST_PAYLOAD_KEYS=1 uv run pytest ...` runs the tests with payload encryption on (a fresh
# key per session), or with the keyring given (`id:base64,...`). Read once, here, before the
# fixtures clear every RECON_ variable from the tests' environment.
TEST_PAYLOAD_KEYS = os.environ.get("RECON_TEST_PAYLOAD_KEYS", "")
if TEST_PAYLOAD_KEYS == "1":
    TEST_PAYLOAD_KEYS = new_key_line("test-1")


def keyring_for_tests() -> Keyring | None:
    return keyring_from(TEST_PAYLOAD_KEYS or None, None)


def settings_for(task_queue: str, **changes) -> Settings:
    return replace(load_settings(), task_queue=task_queue, **changes)


@contextlib.asynccontextmanager
async def inprocess_worker(settings: Settings) -> AsyncIterator[None]:
    """A real worker in this process (for tests that do not kill it)."""
    from worker import run_worker

    ready, stop = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(run_worker(settings, ready=ready, stop=stop))
    await asyncio.wait_for(ready.wait(), 30)
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def start(client: Client, settings: Settings, day: str, warehouse: str) -> WorkflowHandle:
    from starter import start_night

    return await start_night(client, settings, day, warehouse)


async def ledger_rows(pool: asyncpg.Pool, workflow_id: str) -> list[asyncpg.Record]:
    return await pool.fetch(
        "SELECT * FROM ledger_entries WHERE workflow_id = $1 ORDER BY reference", workflow_id
    )


async def wait_for(predicate, timeout: float, what: str, every: float = 0.1):
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(every)


def recon_cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run the real `recon` command line as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "recon.cli", *args], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=timeout,
    )


async def wait_awaiting_decision(handle: WorkflowHandle, timeout: float = 120) -> None:
    """Until the run itself waits for a person: its handover row is written by an activity a
    moment before the workflow takes the result, and a decision sent in between is refused."""
    async def waiting() -> bool:
        return (await handle.query("progress"))["status"] == "AwaitingDecision"
    await wait_for(waiting, timeout, f"{handle.id} to wait for a decision")


async def first_handover(pool: asyncpg.Pool, workflow_id: str, timeout: float = 120) -> asyncpg.Record:
    """The run's first handover row, once it is written (a step that hands over writes it)."""

    async def written() -> asyncpg.Record | None:
        return await pool.fetchrow("SELECT * FROM handovers WHERE workflow_id = $1"
                                   " ORDER BY handover_no LIMIT 1", workflow_id)

    return await wait_for(written, timeout, "a handover")
