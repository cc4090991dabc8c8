"""Over-delivery billed as delivered (issue 38): 541 received and billed of 500 ordered is not
accepted whole. A line accepts at most the order (plus RECON_OVERDELIVERY_TOLERANCE_PERCENT),
whatever arrived; the rest is a quantity claim, and the summary names the over-delivery.
"""

from __future__ import annotations

import asyncpg
import pytest
from temporalio.client import Client

from tests.helpers import inprocess_worker, settings_for
from tests.system.test_across_nights import PRICE, _adjustments, _bill, _booked, _order, _receive, _run

pytestmark = pytest.mark.slow


async def _over_delivered_night(pool: asyncpg.Pool, day: str, wh: str) -> None:
    po = f"PO-{wh}-1"
    await _order(pool, po, "S008", wh, day, {"SKU-O1": 500})
    await _receive(pool, po, "SKU-O1", wh, 541, day)
    await _bill(pool, f"INV-{wh}-1", "S008", wh, day, po, [("SKU-O1", 541)])


async def test_an_over_delivery_billed_as_delivered_is_claimed_beyond_the_order(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    await _over_delivered_night(pool, day, wh)
    settings = settings_for(queue, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        wf = await _run(client, settings, day, wh)
    assert await _adjustments(pool, wf) == [(f"INV-{wh}-1", 1, "qty", 41 * PRICE)]
    assert await _booked(pool, wf) == {(f"INV-{wh}-1", 1): 500}, "stock books what was accepted"
    detail = await pool.fetchval("SELECT detail FROM mismatches WHERE workflow_id = $1", wf)
    assert "41 beyond the order (over-delivered" in detail, detail
    summary = await pool.fetchval("SELECT body FROM outbox WHERE key = $1", f"{wf}:summary")
    assert "OVER-DELIVERED" in summary, summary
    assert (f"INV-{wh}-1 (S008) line 1 (PO-{wh}-1, SKU-O1): billed 541, 541 received to date, "
            "500 accepted, 41 beyond the order") in summary, summary


async def test_an_over_delivery_within_the_tolerance_is_accepted(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    await _over_delivered_night(pool, day, wh)
    settings = settings_for(queue, overdelivery_tolerance_percent=10.0)  # up to 550 accepted
    async with inprocess_worker(settings):
        wf = await _run(client, settings, day, wh)
    assert await _adjustments(pool, wf) == []
    assert await _booked(pool, wf) == {(f"INV-{wh}-1", 1): 541}
