"""The nightly schedule: a firing starts `recon-{date}-{warehouse}` for the right business date,
never two runs of a warehouse at once, and a backfill starts each missing night exactly once."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta

import asyncpg
from temporalio.client import Client

from recon.domain.schedules import StarterOutcome, business_date_of
from recon.tools.seed import seed_night
from tests.approvers import signed
from tests.helpers import inprocess_worker, recon_cli, settings_for, wait_for


async def _executions(client: Client, query: str) -> list:
    return [w async for w in client.list_workflows(query)]


async def _starter_results(client: Client, warehouse: str) -> list:
    starters = await _executions(
        client, f"WorkflowType = 'NightlyStarter' AND TemporalScheduledById = 'recon-nightly-{warehouse}'")
    return [await client.get_workflow_handle(s.id, run_id=s.run_id, result_type=StarterOutcome)
            .result() for s in starters]


async def test_a_triggered_schedule_starts_the_night_and_a_second_trigger_starts_nothing(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    _, warehouse, queue = night
    # The run stops at the gate (cap of ₹1) so it is still running when the second trigger comes.
    env = stack.env(RECON_TASK_QUEUE=queue, RECON_GATE_MAX_TOTAL_PAISE="100")
    before = business_date_of(datetime.now(UTC), "Asia/Kolkata", 1)
    for day in {before, before + timedelta(days=1)}:  # in case the test straddles midnight IST
        await seed_night(pool, day.isoformat(), warehouse, invoices=30, mismatches=4)

    made = recon_cli(env, "schedule", "create", "--warehouse", warehouse, "--at", "02:00",
                     "--tz", "Asia/Kolkata")
    assert made.returncode == 0, made.stderr
    again = recon_cli(env, "schedule", "create", "--warehouse", warehouse)
    assert again.returncode == 1 and "exists already" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1

    # The gate's cap is the worker's policy (not the starter's): this worker holds at ₹1.
    async with inprocess_worker(settings_for(queue, gate_max_total_paise=100)):
        fired = recon_cli(env, "schedule", "trigger", "--warehouse", warehouse)
        assert fired.returncode == 0, fired.stderr

        async def the_night() -> list:
            return await _executions(client, f"ReconWarehouse = '{warehouse}'")
        runs = await wait_for(the_night, 30, "the schedule to start the night")
        assert len(runs) == 1
        expected = {f"recon-{d}-{warehouse}" for d in (before, business_date_of(
            datetime.now(UTC), "Asia/Kolkata", 1))}
        assert runs[0].id in expected, runs[0].id
        handle = client.get_workflow_handle(runs[0].id)
        day = runs[0].id.removeprefix("recon-").removesuffix(f"-{warehouse}")
        attrs = (await handle.describe()).typed_search_attributes
        named = {p.key.name: p.value for p in attrs}
        assert (named["ReconWarehouse"], named["ReconDate"]) == (warehouse, day)

        async def at_the_gate() -> bool:
            return (await handle.query("progress"))["status"] == "AwaitingDecision"
        await wait_for(at_the_gate, 60, "the night to wait at the gate")

        fired = recon_cli(env, "schedule", "trigger", "--warehouse", warehouse)
        assert fired.returncode == 0, fired.stderr

        async def skipped() -> bool:
            d = await client.get_schedule_handle(f"recon-nightly-{warehouse}").describe()
            return d.info.num_actions_skipped_overlap >= 1
        await wait_for(skipped, 15, "the second firing to be skipped")
        assert len(await _executions(
            client, f"TemporalScheduledById = 'recon-nightly-{warehouse}'")) == 1
        assert len(await the_night()) == 1

        await handle.execute_update("decide", await signed(pool, stack.state, handle.id,
                                                            "resume"))
        assert (await asyncio.wait_for(handle.result(), 60))["status"] == "Completed"
        results = await asyncio.wait_for(_starter_results(client, warehouse), 30)
        assert [(r.workflow_id, r.outcome) for r in results] == [(runs[0].id, "completed")]
        assert results[0].detail.startswith("Completed: "), "the night in words on the starter too"

    described = recon_cli(env, "schedule", "describe", "--warehouse", warehouse)
    assert described.returncode == 0 and "skipped because a night was still running: 1" in \
        described.stdout, described.stdout
    listed = recon_cli(env, "schedule", "list")
    assert listed.returncode == 0 and warehouse in listed.stdout
    for verb in ("pause", "unpause"):
        done = recon_cli(env, "schedule", verb, "--warehouse", warehouse)
        assert done.returncode == 0, done.stderr
    assert recon_cli(env, "schedule", "delete", "--warehouse", warehouse).returncode == 0
    gone = recon_cli(env, "schedule", "trigger", "--warehouse", warehouse)
    assert gone.returncode == 1 and "no schedule" in gone.stderr


async def test_a_backfill_starts_each_missing_night_once(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    _, warehouse, queue = night
    env = stack.env(RECON_TASK_QUEUE=queue)
    nights = [date(2026, 10, 10) + timedelta(days=n) for n in range(3)]
    for day in nights:
        await seed_night(pool, day.isoformat(), warehouse, invoices=20, mismatches=3)
    assert recon_cli(env, "schedule", "create", "--warehouse", warehouse, "--paused").returncode == 0
    bad = recon_cli(env, "schedule", "backfill", "--warehouse", warehouse,
                    "--from", "2026-10-12", "--to", "2026-10-10")
    assert bad.returncode == 1 and "before" in bad.stderr
    ids = [f"recon-{d}-{warehouse}" for d in nights]

    async def finished(want: int):
        async def check():
            done = await _executions(
                client, f"ReconWarehouse = '{warehouse}' AND ExecutionStatus = 'Completed'")
            return done if len(done) >= want else None
        return await wait_for(check, 90, f"{want} nights to finish", every=0.5)

    async with inprocess_worker(settings_for(queue)):
        for round_ in (1, 2):  # the second backfill finds every night there and starts none
            filled = recon_cli(env, "schedule", "backfill", "--warehouse", warehouse,
                               "--from", nights[0].isoformat(), "--to", nights[-1].isoformat())
            assert filled.returncode == 0, filled.stderr
            done = await finished(3)
            assert sorted(w.id for w in done) == ids

            async def starters_done(want: int = 3 * round_) -> list | None:
                found = await _executions(
                    client, f"WorkflowType = 'NightlyStarter' AND TemporalScheduledById = "
                    f"'recon-nightly-{warehouse}' AND ExecutionStatus = 'Completed'")
                return found if len(found) >= want else None
            await wait_for(starters_done, 60, "the starters to finish", every=0.5)

    results = await _starter_results(client, warehouse)
    outcomes = sorted((r.workflow_id, r.outcome) for r in results)
    assert outcomes == sorted([(i, "completed") for i in ids] + [(i, "exists") for i in ids])
    for wid in ids:  # each night ran exactly once
        assert len(await _executions(client, f"WorkflowId = '{wid}'")) == 1
