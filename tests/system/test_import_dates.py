"""An invoice dated outside the window around the business date (RECON_INVOICE_DATE_WINDOW_DAYS),
or before the purchase order it cites, is held, not posted (issue 37, item 5): step 3 parks each
of its lines with both dates as evidence; an invoice dated within the window and after its order
reconciles as before. Documents written in each standard's shape."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta
from pathlib import Path

import asyncpg
from temporalio.client import Client

from recon.documents.formats.reading import PartyIds
from recon.tools import cii_writer, gst_writer, ubl_writer
from tests.helpers import inprocess_worker, settings_for, start
from tests.system.test_import_formats import Suppliers, _doc, _import


async def test_invoices_dated_out_of_the_window_or_before_their_order_are_parked(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    day, warehouse, queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)  # both orders dated `day`
    ids = PartyIds(gstin=s.gstin, name="A Ltd")
    early = (date.fromisoformat(day) - timedelta(days=5)).isoformat()
    folder = tmp_path / "inbox"
    folder.mkdir()
    # All three bill 120.00 against 100.00: each would post a ₹200 price adjustment (and its tax).
    (folder / "old.json").write_text(
        gst_writer.write(_doc(f"OLD-{warehouse}", s.a, "2013-04-01", s.po_a, 12_000), ids))
    (folder / "early.xml").write_text(
        ubl_writer.write(_doc(f"EARLY-{warehouse}", s.a, early, s.po_a, 12_000), ids))
    (folder / "ok.xml").write_text(cii_writer.write(
        _doc(f"OK-{warehouse}", s.c, day, s.po_c, 12_000), PartyIds(name="C")))
    done = await _import(stack, day, warehouse, folder)
    assert done.returncode == 0, done.stderr

    settings = settings_for(queue, gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        assert (await asyncio.wait_for(handle.result(), 90)).status == "Completed"
    parked = {r["invoice_no"]: r for r in await pool.fetch(
        "SELECT invoice_no, reason, evidence FROM parked_items WHERE workflow_id = $1",
        handle.id)}
    days = (date.fromisoformat(day) - date(2013, 4, 1)).days
    old = parked[f"{s.a}:OLD-{warehouse}"]
    assert old["reason"] == (f"invoice dated 2013-04-01, {days} days from the business date {day}"
                             " (RECON_INVOICE_DATE_WINDOW_DAYS 90)"), old["reason"]
    assert f"invoice date 2013-04-01; business date {day}; {s.po_a} ordered on {day}" \
        in old["evidence"]
    assert parked[f"{s.a}:EARLY-{warehouse}"]["reason"] == (
        f"invoice dated {early}, before its purchase order {s.po_a} of {day}")
    assert f"{s.c}:OK-{warehouse}" not in parked
    ledger = {(r["invoice_no"], r["kind"], r["amount_paise"]) for r in await pool.fetch(
        "SELECT * FROM ledger_entries WHERE workflow_id = $1", handle.id)}
    # ₹200 and the 18 % tax the CII charged on it (docs/books.md "Tax")
    assert ledger == {(f"{s.c}:OK-{warehouse}", "price", 23_600)}, "the held ones post nothing"
