"""Two kinds of retry, two waits: a lost worker's step is retried at once (0.1 s), a temporary
error (the service pushed back) waits 1 s, 2 s, 4 s, set on the error itself."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import asyncpg
from temporalio.client import Client

from recon.domain.errors import retry_wait
from recon.tools.seed import seed_night
from tests.helpers import settings_for, start


def test_temporary_errors_wait_longer_each_attempt_and_others_use_the_policy() -> None:
    assert [retry_wait("temporary", n) for n in (1, 2, 3)] == [
        timedelta(seconds=1), timedelta(seconds=2), timedelta(seconds=4)]
    assert retry_wait("unknown", 1) is None


async def test_a_temporary_error_waits_a_second_before_the_retry(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=8)
    spawn_worker(queue, RECON_FAILPOINTS="post_adjustments:3:temporary", RECON_POST_BATCH="2")
    handle = await start(client, settings_for(queue, post_batch_size=2), day, warehouse)
    await asyncio.wait_for(handle.result(), 60)
    rows = await pool.fetch(
        "SELECT posted_at FROM ledger_entries l JOIN mismatches m ON m.reference = l.reference "
        "WHERE m.workflow_id = $1 ORDER BY m.seq", handle.id)
    assert len(rows) == 8
    gap = (rows[2]["posted_at"] - rows[1]["posted_at"]).total_seconds()
    assert gap >= 0.9, f"the retry after a temporary error came {gap:.2f} s later"


async def test_a_killed_workers_step_goes_to_the_other_worker_within_seconds(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    """Heartbeat 2 s, retry after 0.1 s, sticky timeout 0.2 s, timers on a 10 ms grain: about
    2.5 s here (the old 3 s heartbeat, 1 s retry, 1 s sticky and 1 s timer grain took ~6 s).
    The bound leaves room for a busy machine."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=40)
    env = {"RECON_FAILPOINTS": "post_adjustments:24:first", "RECON_POST_BATCH": "5"}
    workers = [spawn_worker(queue, **env), spawn_worker(queue, **env)]
    handle = await start(client, settings_for(queue, post_batch_size=5), day, warehouse)
    while all(w.process.poll() is None for w in workers):
        await asyncio.sleep(0.01)
    crashed = time.monotonic()
    await asyncio.wait_for(handle.result(), 60)
    took = time.monotonic() - crashed
    assert [w.process.poll() for w in workers].count(137) == 1
    assert await pool.fetchval(
        "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1", handle.id) == 40
    assert took < 5.0, f"crash to finished run took {took:.1f} s"
