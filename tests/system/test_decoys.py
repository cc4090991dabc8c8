"""A decoy line cannot beat the evidence check (issue 39, item 4; docs/design.md §11).

The supplier's document bills 80 × SKU-L1 and also carries a "delivery memo" for 40 at the same
rate and a second "amount payable" total for 40; 40 were received. A model told (by the document,
say) to read 40 answers 40: every figure it gives stands on some line of the document, and the
stated totals include its sum. The invoice is parked with both readings, nothing reconciled; an
honest document with a repeated line and sub-total + tax = total reconciles beside it."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from temporalio.client import Client

from recon.domain.keys import number_of, workflow_id_for
from recon.tools.seed import seed_night
from tests.fakes.openai_server import ScriptedOpenAI
from tests.helpers import ledger_rows, settings_for, start
from tests.system.test_trust import _bill, _parked

pytestmark = pytest.mark.slow


async def test_a_decoy_memo_and_a_second_total_park_the_invoice_with_both_readings(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    day, warehouse, queue = night
    tag = warehouse.upper()
    await seed_night(pool, day, warehouse, invoices=10, mismatches=2)
    wf = workflow_id_for(day, warehouse)
    decoy, honest = f"DECOY-{tag}", f"HONEST-{tag}"
    doc = await _bill(pool, day, warehouse, decoy, [("SKU-L1", 80, 120_00, 80, 120_00, 40)])
    doc = doc.replace("Total: 9,600.00", "Delivery memo: SKU-L1 qty 40 rate 120.00\n"
                      "Total: 9,600.00\nAmount payable: 4,800.00")
    good = await _bill(pool, day, warehouse, honest, [("SKU-L2", 10, 50_00, 10, 50_00, 10)])
    good = good.replace("Total: 500.00", "Delivered: SKU-L2 10 at 50.00\nSub-total: 500.00\n"
                        "GST 18%: 90.00\nTotal: 590.00\nAmount payable: 590.00")
    await pool.execute("UPDATE invoices SET document = $2 WHERE invoice_no = $1", decoy, doc)
    await pool.execute("UPDATE invoices SET document = $2 WHERE invoice_no = $1", honest, good)
    assert "Delivery memo" in doc and "Sub-total" in good
    with ScriptedOpenAI() as fake:
        fake.always(decoy, "qty=SKU-L1:40")
        spawn_worker(queue, **fake.env(), RECON_GATE_MAX_PARKED_RATIO="0.5")
        handle = await start(client, settings_for(queue), day, warehouse)
        summary = await asyncio.wait_for(handle.result(), 120)

    assert summary.status == "Completed"
    parked = await _parked(pool, wf)
    assert set(parked) == {decoy}, parked
    assert "more than one line" in parked[decoy]
    assert "the model read 40 × SKU-L1 at ₹120 (line 1)" in parked[decoy]
    assert "| 1 | SKU-L1 | goods | 80 | 120.00 |" in parked[decoy]
    assert "Delivery memo: SKU-L1 qty 40 rate 120.00" in parked[decoy]
    posted = {number_of(r["invoice_no"]) for r in await ledger_rows(pool, wf)}
    assert decoy not in posted
    lines = {number_of(r["invoice_no"]) for r in await pool.fetch(
        "SELECT DISTINCT invoice_no FROM invoice_lines WHERE workflow_id = $1", wf)}
    assert honest in lines and decoy not in lines
