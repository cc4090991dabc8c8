"""A Factur-X PDF whose page says one quantity and whose embedded XML says another is not
reconciled on the XML's word (issue 37, item 8): the import says it will be parked, the night
parks it with both readings as evidence and posts nothing for it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import asyncpg
from temporalio.client import Client

from recon.documents.formats import facturx
from recon.documents.formats.reading import PartyIds
from recon.documents.layouts import render
from recon.tools import cii_writer
from tests.helpers import inprocess_worker, settings_for, start
from tests.system.test_import_formats import Suppliers, _doc, _import


async def test_a_page_that_disagrees_with_its_xml_parks_the_invoice(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    day, warehouse, queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    folder = tmp_path / "inbox"
    folder.mkdir()
    number = f"FX-{warehouse}-1"
    xml_says = _doc(number, s.a, day, s.po_a, 12_000)  # 10 at 120.00: over-billed by ₹200
    page_says = replace(xml_says, lines=[replace(xml_says.lines[0], qty=8)])
    (folder / "fx.pdf").write_bytes(facturx.write(
        cii_writer.write(xml_says, PartyIds(gstin=s.gstin)), render(page_says, "table")))

    done = await _import(stack, day, warehouse, folder)
    assert done.returncode == 0, done.stderr
    assert "1 will be parked by the run as unreadable: fx.pdf: fx.pdf: its embedded XML and its " \
           "page disagree: line 1 (SKU-1001) quantity 10 in the XML, 8 on the page" in done.stdout

    settings = settings_for(queue, gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        assert (await handle.result()).status == "Completed"
    parked = await pool.fetchrow("SELECT reason, evidence FROM parked_items WHERE workflow_id = $1"
                                 " AND invoice_no = $2", handle.id, f"{s.a}:{number}")
    assert parked is not None and "disagree" in parked["reason"]
    assert "embedded XML: number " + number + "; line 1 SKU-1001 x 10 = 1200.00" \
        in parked["evidence"], parked["evidence"]
    assert "page: number " + number + "; line 1 SKU-1001 x 8 = 960.00" in parked["evidence"]
    assert await pool.fetchval("SELECT count(*) FROM ledger_entries WHERE workflow_id = $1",
                               handle.id) == 0, "nothing posted on the XML's word"
