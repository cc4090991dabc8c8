"""A night missed while Temporal was down is made up once when it comes back (inside the
catch-up window): a file-backed dev server of its own is stopped across the firing time."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from recon.ops import schedules
from recon.runtime.embedded import TemporalDevServer, restartable_port
from recon.runtime.temporal_client import connect
from recon.tools.seed import seed_night
from tests.helpers import inprocess_worker, settings_for, wait_for


@pytest.mark.slow
async def test_a_firing_missed_while_the_server_was_down_runs_once(
    pool: asyncpg.Pool, night, tmp_path: Path
) -> None:
    _, warehouse, queue = night
    server = TemporalDevServer(tmp_path / "temporal", port=restartable_port(),
                               ui_port=restartable_port(),
                               persistent=True)
    server.start()
    try:
        settings = replace(settings_for(queue), temporal_address=server.address)
        client = await connect(settings)
        probe = await schedules.create(client, settings, f"{warehouse}-probe", "00:00", "UTC")
        await client.get_schedule_handle(probe).delete()  # a fresh file-backed server is slow at first
        fire = (datetime.now(UTC) + timedelta(seconds=90)).replace(second=0, microsecond=0)
        await schedules.create(client, settings, warehouse, f"{fire:%H:%M}", "UTC", lag_days=0,
                               catchup=timedelta(minutes=10))
        handle = client.get_schedule_handle(f"recon-nightly-{warehouse}")

        async def planned() -> bool:  # the scheduler has taken up the schedule and planned `fire`
            return fire in (await handle.describe()).info.next_action_times
        await wait_for(planned, 30, "the scheduler to plan the firing", every=0.2)
        server.stop()  # down across the firing time
        await seed_night(pool, fire.date().isoformat(), warehouse, invoices=20, mismatches=2)
        await asyncio.sleep(max(0.0, (fire - datetime.now(UTC)).total_seconds()) + 3)
        server.start()
        client = await connect(settings)
        async with inprocess_worker(settings):
            wid = f"recon-{fire.date()}-{warehouse}"

            async def finished() -> bool:
                found = [w async for w in client.list_workflows(
                    f"WorkflowId = '{wid}' AND ExecutionStatus = 'Completed'")]
                return bool(found)
            try:
                await wait_for(finished, 60, "the missed night to be made up", every=0.5)
            except AssertionError:
                everything = [(w.id, w.workflow_type, w.status) async for w in client.list_workflows()]
                d = await client.get_schedule_handle(f"recon-nightly-{warehouse}").describe()
                raise AssertionError(f"{everything} {d.info} fire={fire}") from None
            starters = [w async for w in client.list_workflows(
                f"TemporalScheduledById = 'recon-nightly-{warehouse}'")]
            assert len(starters) == 1, "made up once"
            assert len([w async for w in client.list_workflows(f"WorkflowId = '{wid}'")]) == 1
    finally:
        server.stop()
