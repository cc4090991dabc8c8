"""Credit notes answering our debit note by any standard's reference field are linked to it in the
night's summary (issue 37, item 6): a GST credit note quoting the claim in `OthRefNo` (its `InvNo`
naming the invoice), a CII one in `AdditionalReferencedDocument`, a UBL one in
`DiscrepancyResponse`; before, only a UBL `BillingReference` (or GST `InvNo`) was."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
from temporalio.client import Client

from recon.documents.formats.reading import CREDIT_NOTE, PartyIds
from recon.tools import cii_writer, gst_writer, ubl_writer
from tests.helpers import inprocess_worker, settings_for, start
from tests.system.test_import_formats import Suppliers, _doc, _import


async def test_credit_notes_link_to_our_claim_by_any_reference_field(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    day, warehouse, queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    ids = PartyIds(gstin=s.gstin, name="A Ltd")
    claim = f"DN-{day.replace('-', '')}-{warehouse.upper()}-{s.a}"
    folder = tmp_path / "inbox"
    folder.mkdir()
    invoice = f"GST/{warehouse}/1"
    # 120.00 billed against a PO price of 100.00: our claim `claim` for A.
    (folder / "invoice.json").write_text(gst_writer.write(_doc(invoice, s.a, day, s.po_a, 12_000),
                                                          ids))
    gst = json.loads(gst_writer.write(_doc(f"CN/{warehouse}/1", s.a, day, s.po_a, 2_000), ids,
                                      CREDIT_NOTE, [invoice]))
    gst["RefDtls"]["PrecDocDtls"][0]["OthRefNo"] = f"against your debit note {claim.lower()}"
    (folder / "cn-gst.json").write_text(json.dumps(gst))
    cii = cii_writer.write(_doc(f"CN/{warehouse}/2", s.a, day, s.po_a, 1_000), ids, CREDIT_NOTE)
    (folder / "cn-cii.xml").write_text(cii.replace(
        "</ram:ApplicableHeaderTradeAgreement>",
        f"<ram:AdditionalReferencedDocument><ram:IssuerAssignedID>{claim}</ram:IssuerAssignedID>"
        "<ram:TypeCode>916</ram:TypeCode></ram:AdditionalReferencedDocument>"
        "</ram:ApplicableHeaderTradeAgreement>"))
    ubl = ubl_writer.write(_doc(f"CN/{warehouse}/3", s.a, day, s.po_a, 500), ids, CREDIT_NOTE)
    (folder / "cn-ubl.xml").write_text(ubl.replace(
        "<cac:AccountingSupplierParty>",
        f"<cac:DiscrepancyResponse><cbc:ReferenceID>{claim}</cbc:ReferenceID>"
        "</cac:DiscrepancyResponse><cac:AccountingSupplierParty>", 1))

    done = await _import(stack, day, warehouse, folder)
    assert done.returncode == 0, done.stderr
    assert "credit notes kept apart (not reconciled): 3" in done.stdout, done.stdout

    settings = settings_for(queue, gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        assert (await handle.result()).status == "Completed"
    summary = await pool.fetchval(
        "SELECT body FROM outbox WHERE workflow_id = $1 AND kind = 'summary'", handle.id)
    for n in (1, 2, 3):
        line = next(ln for ln in summary.splitlines() if f"CN/{warehouse}/{n}," in ln)
        assert f"answers debit note {claim}" in line, line
    gst_line = next(ln for ln in summary.splitlines() if f"CN/{warehouse}/1," in ln)
    assert f"cites {invoice}" in gst_line, gst_line
