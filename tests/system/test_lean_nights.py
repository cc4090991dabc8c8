"""A small night's steps 3-6 and gate run as local activities (workflows/policies.py
LOCAL_STEPS_UP_TO): a temporary error in one is retried in the worker without a person, and
`recon inspect` counts the retry from the step's marker as it counts a regular activity's."""

from __future__ import annotations

import asyncio

import asyncpg
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from recon.ops.history import read_history
from recon.tools.seed import seed_night
from tests.helpers import ledger_rows, settings_for, start


async def test_a_temporary_error_in_a_local_step_is_retried_and_counted(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=5)
    spawn_worker(queue, RECON_FAILPOINTS="before:match_orders:temporary")
    handle = await start(client, settings_for(queue), day, warehouse)
    summary = await asyncio.wait_for(handle.result(), 60)
    assert summary.status == "Completed"
    history = await read_history(handle)
    match = history.steps["match_orders"]
    assert (match.activities, match.max_attempt, match.retries, match.completed) == (1, 2, 1, 1)
    assert history.activity_retries == 1
    scheduled = {e.activity_task_scheduled_event_attributes.activity_type.name
                 for e in (await handle.fetch_history()).events
                 if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED}
    assert "match_orders" not in scheduled and "post_adjustments" in scheduled
    assert len(await ledger_rows(pool, handle.id)) == 5
