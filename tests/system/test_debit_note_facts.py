"""A debit note a supplier can check (issue 38): per line, received to date with the receipts,
billed before with the earlier bills, billed now, what was accepted and the claim; a re-bill names
the bill it repeats; no "goods received on" a night for goods that never came.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from temporalio.client import Client

from tests.approvers import signed
from tests.helpers import inprocess_worker, settings_for, start, wait_awaiting_decision
from tests.system.test_across_nights import _bill, _day, _order, _receive, _run

pytestmark = pytest.mark.slow


async def _note(pool: asyncpg.Pool, wf: str) -> str:
    return await pool.fetchval(
        "SELECT body FROM outbox WHERE workflow_id = $1 AND kind = 'debit-note'", wf)


async def test_a_partial_delivery_over_three_nights_then_a_bill_for_goods_that_never_came(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    po = f"PO-{wh}-1"
    await _order(pool, po, "S006", wh, day, {"SKU-F1": 100})
    await _receive(pool, po, "SKU-F1", wh, 40, day)
    await _receive(pool, po, "SKU-F1", wh, 30, _day(day, 1))
    await _bill(pool, f"INV-{wh}-1", "S006", wh, day, po, [("SKU-F1", 40)])
    await _bill(pool, f"INV-{wh}-2", "S006", wh, _day(day, 1), po, [("SKU-F1", 30)])
    await _bill(pool, f"INV-{wh}-3", "S006", wh, _day(day, 2), po, [("SKU-F1", 30)])
    # Grace 0: a bill ahead of its goods is claimed at once, so night 3 claims what never came.
    settings = settings_for(queue, gate_max_adjustment_share=1.0, receipt_grace_days=0)
    async with inprocess_worker(settings):
        for n in (0, 1):
            await _run(client, settings, _day(day, n), wh)
        third = await _run(client, settings, _day(day, 2), wh)
    note = await _note(pool, third)
    subject = await pool.fetchval("SELECT subject FROM outbox WHERE key = $1", f"{third}:summary")
    assert subject.endswith(": 1 debit note"), subject
    assert "Goods received on" not in note, note
    assert f"INV-{wh}-3 line 1, SKU-F1 on order {po}, invoice of 15 Oct 2026" in note, note
    assert "Billed now:        30 units at ₹100 a unit" in note, note
    assert "Received to date:  70 units (receipt " in note and "of 13 Oct 2026: 40;" in note \
        and "of 14 Oct 2026: 30)" in note, note
    assert (f"Billed before:     70 units (INV-{wh}-1 of 13 Oct 2026: 40; INV-{wh}-2 of "
            f"14 Oct 2026: 30)") in note, note
    assert "Accepted now:      0 units" in note and "Claimed:           30 units" in note, note
    assert "repeats" not in note, "not a repeat: the order had room for it"


async def test_a_rebill_names_the_bill_it_repeats(stack, pool: asyncpg.Pool, client: Client,
                                                  night) -> None:
    day, wh, queue = night
    po = f"PO-{wh}-1"
    await _order(pool, po, "S007", wh, day, {"SKU-G1": 30})
    await _receive(pool, po, "SKU-G1", wh, 30, day)
    await _bill(pool, f"INV-{wh}-1", "S007", wh, day, po, [("SKU-G1", 30)])
    await _bill(pool, f"INV-{wh}-9", "S007", wh, _day(day, 1), po, [("SKU-G1", 30)])
    settings = settings_for(queue, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        await _run(client, settings, day, wh)
        second = await start(client, settings, _day(day, 1), wh)

        await wait_awaiting_decision(second)  # the gate holds the possible duplicate
        decision = await signed(pool, stack.state, second.id, "resume", note="a true re-bill")
        await second.execute_update("decide", decision)
        await asyncio.wait_for(second.result(), 120)
    note = await _note(pool, second.id)
    assert "Received to date:  30 units" in note, note
    assert f"Billed before:     30 units (INV-{wh}-1 of 13 Oct 2026: 30)" in note, note
    assert f"This invoice repeats our earlier bill INV-{wh}-1" in note, note
    assert "Accepted now:      0 units; 30 units beyond the quantity ordered" in note, note
    assert "S007:" not in note, "the supplier reads its own numbers, never our references"
