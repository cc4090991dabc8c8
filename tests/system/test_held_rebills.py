"""A re-bill held awaiting receipt is a possible duplicate (issue 38): the fingerprint check covers
lines held and lines carried from earlier nights, under the night the bill came in, so the gate
holds the night the repeat is seen, and the night that would claim it if nobody answered.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle

from tests.approvers import signed
from tests.helpers import inprocess_worker, recon_cli, settings_for, start, wait_awaiting_decision
from tests.system.test_across_nights import PRICE, _adjustments, _bill, _day, _held, _order, _receive, _run

pytestmark = pytest.mark.slow


async def _gate_reason(pool: asyncpg.Pool, handle: WorkflowHandle) -> str:
    await wait_awaiting_decision(handle)
    return await pool.fetchval(
        "SELECT error_message FROM handovers WHERE workflow_id = $1 AND decision IS NULL",
        handle.id)


async def _rebill_of_a_short_delivery(pool: asyncpg.Pool, day: str, wh: str) -> None:
    """A PO line of 40, 24 received; billed 24 on night 0 and the same 24 again on night 1."""
    po = f"PO-{wh}-1"
    await _order(pool, po, "S005", wh, day, {"SKU-D1": 40})
    await _receive(pool, po, "SKU-D1", wh, 24, day)
    await _bill(pool, f"INV-{wh}-1", "S005", wh, day, po, [("SKU-D1", 24)])
    await _bill(pool, f"INV-{wh}-2", "S005", wh, _day(day, 1), po, [("SKU-D1", 24)])


async def test_a_held_rebill_is_held_at_the_gate_then_again_on_the_night_that_claims_it(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    await _rebill_of_a_short_delivery(pool, day, wh)
    settings = settings_for(queue, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        await _run(client, settings, day, wh)
        second: WorkflowHandle = await start(client, settings, _day(day, 1), wh)
        seen = await _gate_reason(pool, second)
        # Nobody answers night 1. Nights 2 and 3 carry the held re-bill and hold it again.
        third = await _run(client, settings, _day(day, 2), wh)
        await _run(client, settings, _day(day, 3), wh)
        # Night 4 closes its window (3 days): it would claim 24 units nobody delivered.
        fifth = await start(client, settings, _day(day, 4), wh)
        claimed = await _gate_reason(pool, fifth)
        assert (await fifth.describe()).status == WorkflowExecutionStatus.RUNNING
        # What the finance head reads of a gate hold: a hold, not a failed step; real lines.
        shown = await asyncio.to_thread(recon_cli, stack.env(RECON_TASK_QUEUE=queue),
                                        "handover", second.id)
        await second.terminate("test over")
        await fifth.terminate("test over")
    assert f"INV-{wh}-2 (S005) is a possible duplicate of INV-{wh}-1 (S005)" in seen, seen
    assert shown.returncode == 0 and "\\n" not in shown.stdout, shown.stdout
    assert "Held at: the gate before debit notes" in shown.stdout, shown.stdout
    assert "Failed step" not in shown.stdout and "Attempts: 0" not in shown.stdout, shown.stdout
    subject = await pool.fetchval("SELECT subject FROM outbox WHERE key = $1",
                                  f"{second.id}:handover:1")
    assert subject == f"Decision needed: {second.id} held at the gate before debit notes", subject
    assert await _held(pool, second.id) == [(f"INV-{wh}-2", 1)]
    held_evidence = await pool.fetchval("SELECT evidence FROM held_lines WHERE workflow_id = $1",
                                        second.id)
    assert f"possible duplicate of INV-{wh}-1 (S005, night of {day})" in held_evidence, held_evidence
    assert await _held(pool, third) == [(f"INV-{wh}-2", 1)]
    assert f"INV-{wh}-2 (S005) is a possible duplicate of INV-{wh}-1 (S005)" in claimed, claimed
    assert await _adjustments(pool, fifth.id) == [(f"INV-{wh}-2", 1, "qty", 24 * PRICE)]
    detail = await pool.fetchval("SELECT detail FROM mismatches WHERE workflow_id = $1", fifth.id)
    assert f"possible duplicate of INV-{wh}-1 (S005, night of {day})" in detail, detail


async def test_a_held_rebill_a_person_let_go_is_not_asked_about_again(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    await _rebill_of_a_short_delivery(pool, day, wh)
    settings = settings_for(queue, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        await _run(client, settings, day, wh)
        second = await start(client, settings, _day(day, 1), wh)
        await _gate_reason(pool, second)
        decision = await signed(pool, stack.state, second.id, "resume",
                                note="the supplier confirmed a second delivery is coming")
        await second.execute_update("decide", decision)
        assert (await asyncio.wait_for(second.result(), 120)).status == "Completed"
        for n in (2, 3):
            await _run(client, settings, _day(day, n), wh)
        fifth = await _run(client, settings, _day(day, 4), wh)  # claims without a second hold
        status = await asyncio.to_thread(recon_cli, stack.env(RECON_TASK_QUEUE=queue), "status",
                                         second.id)
    assert await _adjustments(pool, fifth) == [(f"INV-{wh}-2", 1, "qty", 24 * PRICE)]
    # The decision's signature check is not a step of the night.
    assert status.returncode == 0 and "check_decision" not in status.stdout, status.stdout
    assert "possible duplicates: 1 bill repeats an earlier bill" in status.stdout, status.stdout
