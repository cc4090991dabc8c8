"""Crash stories with real worker processes: killed hard, killed between steps, frozen and woken,
and a finished run reset by an operator. The ledger must hold each entry exactly once."""

from __future__ import annotations

import asyncio
import subprocess

import asyncpg
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from recon.domain.models import PostResult
from recon.ops.history import read_history
from recon.runtime.embedded import temporal_binary
from recon.tools.seed import seed_night
from tests.fakes.tcp_proxy import TcpProxy
from tests.helpers import ledger_rows, settings_for, start, wait_for

# Real worker processes or whole nights: the slow tier (`uv run pytest -m "not slow"` skips it).
pytestmark = pytest.mark.slow


def _count(pool: asyncpg.Pool, table: str, wf: str):
    return pool.fetchval(f"SELECT count(*) FROM {table} WHERE workflow_id = $1", wf)


async def _post_result(client: Client, handle) -> PostResult:
    history = await read_history(handle)
    payload = history.completed_results["post_adjustments"][-1]
    return (await client.data_converter.decode(payload.payloads, [PostResult]))[0]


async def test_worker_killed_at_entry_24_of_step_7(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    """The seed's crash story: 312 invoices, 40 adjustments, a hard exit at entry 24."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=312, mismatches=40)
    doomed = spawn_worker(queue, RECON_FAILPOINTS="post_adjustments:24", RECON_POST_BATCH="5")
    handle = await start(client, settings_for(queue, post_batch_size=5), day, warehouse)
    assert await doomed.wait_exit(60) == 137
    committed = await _count(pool, "ledger_entries", handle.id)
    assert 0 < committed < 40, "the crash must land inside step 7"

    spawn_worker(queue)
    await asyncio.wait_for(handle.result(), 60)

    rows = await ledger_rows(pool, handle.id)
    assert len(rows) == 40
    assert len({r["reference"] for r in rows}) == 40
    assert await _count(pool, "model_calls", handle.id) == 312
    assert await _count(pool, "invoice_reads", handle.id) == 312
    history = await read_history(handle)
    assert history.steps["post_adjustments"].max_attempt == 2
    assert all(history.steps[s].max_attempt == 1 for s in ("fetch_invoices", "extract_lines"))
    result = await _post_result(client, handle)
    assert result.inserted + result.already_there == 40 - result.started_at
    assert result.inserted == 40 - committed
    # The dead worker ran every workflow task so far (its sticky queue holds the run); the retry
    # makes Temporal forget that queue, so the next workflow task does not wait out the sticky
    # timeout there (activities/lost_worker.py).
    events = (await handle.fetch_history()).events
    assert not [e.event_id for e in events
                if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT]


async def test_crash_between_steps_resumes_at_step_7(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    """Killed after step 6 finished, as step 7 starts: steps 1-6 are not run again."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=8)
    doomed = spawn_worker(queue, RECON_FAILPOINTS="before:post_adjustments")
    handle = await start(client, settings_for(queue), day, warehouse)
    assert await doomed.wait_exit(60) == 137
    assert await _count(pool, "ledger_entries", handle.id) == 0
    calls_before = await _count(pool, "model_calls", handle.id)

    spawn_worker(queue)
    await asyncio.wait_for(handle.result(), 60)

    history = await read_history(handle)
    for step in ("fetch_invoices", "match_orders", "read_stock", "compare_quantities",
                 "flag_mismatches"):
        assert history.steps[step].activities == 1 and history.steps[step].max_attempt == 1, step
    assert history.steps["extract_lines"].max_attempt == 1
    assert history.steps["post_adjustments"].max_attempt == 2
    assert await _count(pool, "model_calls", handle.id) == calls_before == 60
    assert len(await ledger_rows(pool, handle.id)) == 8


async def test_retry_resumes_inside_the_step_near_where_it_died(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    """Heartbeats carry progress; the retry starts near there, walking only the last few again."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=120, mismatches=40)
    doomed = spawn_worker(
        queue, RECON_FAILPOINTS="post_adjustments:24,post_adjustments:delay:0.7",
        RECON_POST_BATCH="5",
    )
    handle = await start(client, settings_for(queue, post_batch_size=5), day, warehouse)
    assert await doomed.wait_exit(60) == 137
    committed = await _count(pool, "ledger_entries", handle.id)
    assert committed == 20

    spawn_worker(queue)
    await asyncio.wait_for(handle.result(), 60)
    result = await _post_result(client, handle)
    assert 0 < result.started_at <= committed, "the retry used the heartbeat's progress"
    assert result.walked_again == committed - result.started_at
    assert result.inserted == 40 - committed
    assert len(await ledger_rows(pool, handle.id)) == 40


@pytest.mark.slow
async def test_a_frozen_worker_that_wakes_up_writes_nothing(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    """Worker A freezes (SIGSTOP) at entry 24 of step 7 and its link to Temporal drops (a paused
    VM whose network went away); past the heartbeat timeout Temporal retries on worker B, which
    finishes the run. Then A wakes (SIGCONT), still cut off from Temporal but not from Postgres,
    so nobody tells it to stop and it goes on writing: its fencing token is stale, Postgres
    refuses the write, and the ledger stays exact.

    (Without the cut, a frozen worker's open long-polls also swallow tasks the server hands it,
    and when it wakes its heartbeat learns it was replaced and the SDK cancels it: a different
    story, where the fence is the second line of defence rather than the only one.)"""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=120, mismatches=40)
    host, port = stack.temporal_address.rsplit(":", 1)
    link = TcpProxy(host, int(port))
    frozen = spawn_worker(queue, RECON_FAILPOINTS="post_adjustments:24:stop", RECON_POST_BATCH="5",
                          TEMPORAL_ADDRESS=f"127.0.0.1:{await link.start()}")
    handle = await start(client, settings_for(queue, post_batch_size=5), day, warehouse)

    await wait_for(lambda: asyncio.to_thread(lambda: "freezing" in frozen.output()), 60,
                   "worker A to freeze at entry 24")
    frozen_token = await pool.fetchval(
        "SELECT max(fence_token) FROM ledger_entries WHERE workflow_id = $1", handle.id)
    assert await _count(pool, "ledger_entries", handle.id) == 20
    await link.cut()

    spawn_worker(queue)
    await asyncio.wait_for(handle.result(), 60)
    before = [tuple(r) for r in await ledger_rows(pool, handle.id)]
    assert len(before) == 40
    assert await pool.fetchval(
        "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1 AND fence_token > $2",
        handle.id, frozen_token) == 20, "B posted the other 20 under a newer token"

    frozen.thaw()
    # Woken, A either meets its stale token at its next write (StaleAttempt) or, if its
    # heartbeat reaches Temporal first, is cancelled before it writes: both write nothing.
    await wait_for(lambda: asyncio.to_thread(
        lambda: "StaleAttempt" in frozen.output() or "cancel" in frozen.output().lower()), 30,
        "worker A to find its token stale or be cancelled")
    await asyncio.sleep(1)
    assert [tuple(r) for r in await ledger_rows(pool, handle.id)] == before
    assert await pool.fetchval(
        "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1 AND fence_token = $2",
        handle.id, frozen_token) == 20


async def test_reset_of_a_finished_run_to_before_step_7_changes_nothing(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=8)
    spawn_worker(queue)
    handle = await start(client, settings_for(queue), day, warehouse)
    await asyncio.wait_for(handle.result(), 60)
    original_run = (await handle.describe()).run_id
    before = [tuple(r) for r in await ledger_rows(pool, handle.id)]
    moves_before = await _count(pool, "stock_movements", handle.id)
    outbox_before = await _count(pool, "outbox", handle.id)

    # The workflow task that scheduled step 7: reset to it, so step 7 onwards runs again.
    history = await handle.fetch_history()
    scheduled = next(
        e for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "post_adjustments"
    )
    reset_to = scheduled.activity_task_scheduled_event_attributes.workflow_task_completed_event_id
    done = subprocess.run(
        [temporal_binary(), "workflow", "reset", "--address", stack.temporal_address,
         "-w", handle.id, "--event-id", str(reset_to), "--reason", "test: redo step 7", "-y"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr

    fresh = client.get_workflow_handle(handle.id)
    await asyncio.wait_for(fresh.result(), 60)
    assert (await fresh.describe()).run_id != original_run
    history = await read_history(fresh)
    assert history.steps["post_adjustments"].completed >= 1
    assert [tuple(r) for r in await ledger_rows(pool, handle.id)] == before
    assert await _count(pool, "stock_movements", handle.id) == moves_before
    assert await _count(pool, "outbox", handle.id) == outbox_before
