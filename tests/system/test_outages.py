"""Outages a nightly job must ride out on its own: Postgres gone for a minute in the middle of
posting, Temporal gone for a minute. Temporary errors are retried with growing waits for the
outage window (30 minutes by default) before a person is asked; nothing is posted twice."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client

from recon.runtime.embedded import TemporalDevServer, restartable_port
from recon.runtime.temporal_client import connect
from recon.tools.seed import seed_night
from tests.helpers import ROOT, ledger_rows, settings_for, start, wait_for

# Real worker processes or whole nights: the slow tier (`uv run pytest -m "not slow"` skips it).
pytestmark = pytest.mark.slow

OUTAGE = float(__import__("os").environ.get("RECON_TEST_OUTAGE", "60"))


async def _posted(pool: asyncpg.Pool, wf: str) -> int:
    return await pool.fetchval("SELECT count(*) FROM ledger_entries WHERE workflow_id = $1", wf)


@pytest.mark.slow
async def test_a_minute_without_postgres_mid_posting_needs_no_person(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=160, mismatches=40)
    env = dict(RECON_FAILPOINTS="post_adjustments:delay:0.3", RECON_POST_BATCH="2")
    worker = spawn_worker(queue, **env)
    handle = await start(client, settings_for(queue, post_batch_size=2), day, warehouse)
    await wait_for(lambda: _at_least(pool, handle.id, 8), 90, "posting to be under way")
    assert stack.postgres is not None
    await asyncio.to_thread(stack.postgres.stop)
    try:
        await asyncio.sleep(OUTAGE)
    finally:
        await asyncio.to_thread(stack.postgres.start)
        await pool.expire_connections()
    try:
        summary = await asyncio.wait_for(handle.result(), 180)
    except TimeoutError:
        raise AssertionError(worker.output()[-6000:]) from None
    assert summary.status == "Completed", worker.output()[-3000:]
    assert not await pool.fetchval(
        "SELECT count(*) FROM handovers WHERE workflow_id = $1", handle.id)
    rows = await ledger_rows(pool, handle.id)
    assert len(rows) == 40 == len({r["reference"] for r in rows})
    assert "database unreachable since" in worker.output()


async def _at_least(pool: asyncpg.Pool, wf: str, n: int) -> bool:
    return await _posted(pool, wf) >= n


@pytest.mark.slow
async def test_a_minute_without_temporal_needs_no_person(
    pool: asyncpg.Pool, night, stack
) -> None:
    """A Temporal server of its own, file-backed, stopped for a minute mid-posting and started
    again on the same data: the worker reconnects and the run finishes exactly."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=160, mismatches=40)
    state = Path(tempfile.mkdtemp(prefix="recon-outage-"))
    server = TemporalDevServer(state, port=restartable_port(), ui_port=restartable_port(),
                               persistent=True)
    server.start()
    log = state / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "recon.cli", "worker"], cwd=ROOT,
        env=stack.env(RECON_TASK_QUEUE=queue, TEMPORAL_ADDRESS=server.address,
                      RECON_FAILPOINTS="post_adjustments:delay:0.3", RECON_POST_BATCH="2"),
        stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )
    try:
        settings = settings_for(queue, post_batch_size=2, temporal_address=server.address)
        own: Client = await connect(settings)
        handle = await start(own, settings, day, warehouse)
        await wait_for(lambda: _at_least(pool, handle.id, 8), 90, "posting to be under way")
        await asyncio.to_thread(server.stop)
        await asyncio.sleep(OUTAGE)
        await asyncio.to_thread(server.start)
        own = await connect(settings)
        summary = await asyncio.wait_for(
            own.get_workflow_handle(handle.id).result(), 180)
        assert summary["status"] == "Completed", log.read_text()[-3000:]
        assert not await pool.fetchval(
            "SELECT count(*) FROM handovers WHERE workflow_id = $1", handle.id)
        rows = await ledger_rows(pool, handle.id)
        assert len(rows) == 40 == len({r["reference"] for r in rows})
        moves = await pool.fetch("SELECT key FROM stock_movements WHERE workflow_id = $1",
                                 handle.id)
        assert len(moves) == len({m["key"] for m in moves}) > 0
    finally:
        worker.kill()
        worker.wait(10)
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
