"""Stale workers can never stall a night or fail its live attempt.

A worker frozen inside a posting transaction holds a lock on its fence; Postgres ends its idle
transaction within seconds, so the takeover never waits on it. A worker frozen long enough that
Temporal handed its open polls newer attempts wakes up with superseded attempts: they ask
Temporal and Postgres before taking a fence, are refused, and the live attempt goes on."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest
from temporalio.client import Client

from recon.tools.seed import seed_night
from tests.helpers import ledger_rows, settings_for, start, wait_for

# Real worker processes or whole nights: the slow tier (`uv run pytest -m "not slow"` skips it).
pytestmark = pytest.mark.slow

HEARTBEAT = 3.0


async def _posted(pool: asyncpg.Pool, wf: str) -> int:
    return await pool.fetchval("SELECT count(*) FROM ledger_entries WHERE workflow_id = $1", wf)


@pytest.mark.slow
async def test_a_worker_frozen_inside_a_posting_transaction_is_fenced_out_in_seconds(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=160, mismatches=40)
    frozen = spawn_worker(queue, RECON_FAILPOINTS="in_transaction:ledger:stop",
                          RECON_POST_BATCH="5", RECON_HEARTBEAT_SECONDS=str(HEARTBEAT))
    settings = settings_for(queue, post_batch_size=5, heartbeat_seconds=HEARTBEAT)
    handle = await start(client, settings, day, warehouse)
    await wait_for(lambda: asyncio.to_thread(lambda: "freezing" in frozen.output()), 60,
                   "worker A to freeze inside its first ledger transaction")
    froze_at = time.monotonic()
    spawn_worker(queue, RECON_POST_BATCH="5", RECON_HEARTBEAT_SECONDS=str(HEARTBEAT))
    summary = await asyncio.wait_for(handle.result(), 60)
    took = time.monotonic() - froze_at
    assert summary.status == "Completed"
    print(f"run finished {took:.1f} s after the freeze (bound {3 * HEARTBEAT:.0f} s)")
    assert took < 3 * HEARTBEAT, f"the frozen lock holder stalled the run for {took:.1f}s"
    rows = await ledger_rows(pool, handle.id)
    assert len(rows) == 40 == len({r["reference"] for r in rows})
    assert not await pool.fetchval("SELECT count(*) FROM handovers WHERE workflow_id = $1",
                                   handle.id)
    frozen.thaw()
    await asyncio.sleep(2)
    assert [tuple(r) for r in await ledger_rows(pool, handle.id)] == [tuple(r) for r in rows]


@pytest.mark.slow
async def test_a_woken_stale_worker_makes_no_live_attempt_fail(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=160, mismatches=40)
    env = dict(RECON_FAILPOINTS="post_adjustments:delay:0.4", RECON_POST_BATCH="2",
               RECON_HEARTBEAT_SECONDS=str(HEARTBEAT))
    stale = spawn_worker(queue, **env)
    settings = settings_for(queue, post_batch_size=2, heartbeat_seconds=HEARTBEAT)
    handle = await start(client, settings, day, warehouse)
    await wait_for(lambda: _posted(pool, handle.id), 60, "posting to start")
    await wait_for(lambda: _at_least(pool, handle.id, 8), 60, "a few batches")
    stale.freeze()
    # Frozen past two heartbeat timeouts: its open polls may be handed the retry, which then
    # times out there too, and the next attempt goes to the live worker.
    spawn_worker(queue, **env)
    await asyncio.sleep(2.5 * HEARTBEAT)
    stale.thaw()
    summary = await asyncio.wait_for(handle.result(), 90)
    assert summary.status == "Completed"
    assert not await pool.fetchval("SELECT count(*) FROM handovers WHERE workflow_id = $1",
                                   handle.id), "a stale worker made the live attempt hand over"
    rows = await ledger_rows(pool, handle.id)
    assert len(rows) == 40 == len({r["reference"] for r in rows})
    await asyncio.sleep(2)  # whatever the woken worker still runs writes nothing more
    assert len(await ledger_rows(pool, handle.id)) == 40


async def _at_least(pool: asyncpg.Pool, wf: str, n: int) -> bool:
    return await _posted(pool, wf) >= n
