"""Two worker processes on one task queue share a night, and losing either one mid-run still
finishes the night exactly: the one running step 7 (Temporal retries the step on the other after
the heartbeat timeout) or the other one (which may hold the run's sticky workflow task)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from recon.tools.seed import seed_night
from tests.helpers import settings_for, start, wait_for

INVOICES, MISMATCHES = 300, 40


async def _count(pool: asyncpg.Pool, sql: str, wf: str) -> int:
    return await pool.fetchval(sql, wf)


async def _step_7_runs_on(handle: WorkflowHandle) -> int:
    """The pid of the worker running step 7 now (identities are `pid@host`)."""
    desc = await handle.describe()
    pending = [a for a in desc.raw_description.pending_activities
               if a.activity_type.name == "post_adjustments" and a.last_worker_identity]
    return int(pending[0].last_worker_identity.split("@")[0]) if pending else 0


async def _extracting_identities(handle: WorkflowHandle) -> set[str]:
    scheduled: set[int] = set()
    identities: set[str] = set()
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED and \
                event.activity_task_scheduled_event_attributes.activity_type.name == "extract_lines":
            scheduled.add(event.event_id)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED and \
                event.activity_task_started_event_attributes.scheduled_event_id in scheduled:
            identities.add(event.activity_task_started_event_attributes.identity)
    return identities


@pytest.mark.parametrize("victim", ["runs_step_7", "the_other"])
async def test_two_workers_share_a_night_and_either_can_die(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, victim: str
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=INVOICES, mismatches=MISMATCHES)
    env = {"RECON_POST_BATCH": "5", "RECON_FAILPOINTS": "post_adjustments:delay:0.4"}
    workers = [spawn_worker(queue, **env), spawn_worker(queue, **env)]
    for w in workers:  # both polling before the run starts, so both can take extraction batches
        await wait_for(lambda w=w: asyncio.to_thread(lambda: "worker started" in w.output()), 30,
                       "a worker to start")
    await asyncio.sleep(0.5)
    settings = settings_for(queue, post_batch_size=5, extract_batch_size=10)
    handle = await start(client, settings, day, warehouse)

    await wait_for(lambda: _count(pool, "SELECT count(*) FROM ledger_entries WHERE "
                                        "workflow_id = $1", handle.id), 60, "step 7 to post")
    runner = await wait_for(lambda: _step_7_runs_on(handle), 10, "step 7's worker")
    by_pid = {w.process.pid: w for w in workers}
    assert runner in by_pid
    doomed = by_pid[runner] if victim == "runs_step_7" else next(
        w for pid, w in by_pid.items() if pid != runner)
    posted_before_kill = await _count(
        pool, "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1", handle.id)
    doomed.kill()
    assert posted_before_kill < MISMATCHES, "the kill must land inside step 7"

    await asyncio.wait_for(handle.result(), 90)
    assert len(await _extracting_identities(handle)) == 2, "both workers extracted"
    wf = handle.id
    assert await _count(pool, "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1",
                        wf) == MISMATCHES
    assert await _count(pool, "SELECT count(DISTINCT reference) FROM ledger_entries "
                              "WHERE workflow_id = $1", wf) == MISMATCHES
    assert await _count(pool, "SELECT count(*) FROM model_calls WHERE workflow_id = $1",
                        wf) == INVOICES
    assert await _count(pool, "SELECT count(*) FROM stock_movements WHERE workflow_id = $1",
                        wf) == await _count(
        pool, "SELECT count(*) FROM comparisons WHERE workflow_id = $1", wf)
    assert await _count(pool, "SELECT count(*) FROM outbox WHERE workflow_id = $1 "
                              "AND kind = 'summary'", wf) == 1
