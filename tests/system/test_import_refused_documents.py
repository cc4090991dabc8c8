"""`recon import` names a file that is no invoice for what it is and refuses that file alone: XML
with a DOCTYPE or entities, a delivery note or an order (UBL or CII), a document marked as a test;
the good invoice beside them is imported, the output says each file's fate, the exit is 1 and the
error is one line (issue 37, items 5 and 7)."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from recon.documents.formats import facturx
from recon.documents.formats.reading import PartyIds
from recon.tools import cii_writer, gst_writer, ubl_writer
from tests.system.test_import_formats import Suppliers, _doc, _import, _one_error_line
from tests.unit.test_formats import BILLION_LAUGHS, XXE


def _despatch_advice(number: str) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            '<DespatchAdvice xmlns="urn:oasis:names:specification:ubl:schema:xsd:DespatchAdvice-2"'
            ' xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">'
            f"<cbc:ID>{number}</cbc:ID><cbc:IssueDate>2026-10-13</cbc:IssueDate></DespatchAdvice>")


async def test_each_file_that_is_no_invoice_is_refused_alone_and_named(
        pool: asyncpg.Pool, stack, night, tmp_path: Path) -> None:
    day, warehouse, _queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    a_ids = PartyIds(gstin=s.gstin, name="A Ltd")
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "good.json").write_text(gst_writer.write(_doc(f"G-{warehouse}-1", s.a, day, s.po_a),
                                                       a_ids))
    (folder / "inv.xml").write_bytes(BILLION_LAUGHS)
    (folder / "xxe.xml").write_bytes(XXE)
    (folder / "delivery.xml").write_text(_despatch_advice(f"DA-{warehouse}-1"))
    order = cii_writer.write(_doc(f"O-{warehouse}-1", s.a, day, s.po_a), a_ids)
    (folder / "order.xml").write_text(order.replace("<ram:TypeCode>380<", "<ram:TypeCode>220<"))
    (folder / "test.pdf").write_bytes(facturx.write(
        cii_writer.write(_doc(f"T-{warehouse}-1", s.a, day, s.po_a), a_ids, test=True), "TEST"))

    done = await _import(stack, day, warehouse, folder)
    line = _one_error_line(done)
    assert "5 file(s) refused, each alone" in line
    assert "DOCTYPE not allowed in inv.xml" in line and "DOCTYPE not allowed in xxe.xml" in line
    assert "delivery.xml is a UBL DespatchAdvice: a despatch advice (a delivery note)" in line
    assert "order.xml is a CII document of type code 220: an order, not an invoice" in line
    assert "test.pdf is marked as a test document (ExchangedDocumentContext/TestIndicator" in line
    assert "--supplier" not in line, "nothing here is about who sent it"
    assert f"imported 1 invoice for {day} at {warehouse}" in done.stdout, done.stdout
    stored = [r["invoice_no"] for r in await pool.fetch(
        "SELECT invoice_no FROM invoices WHERE warehouse = $1", warehouse)]
    assert stored == [f"G-{warehouse}-1"], "the good invoice beside them is imported"


async def test_a_hostile_file_beside_an_unattributable_one_still_refuses_all(
        pool: asyncpg.Pool, stack, night, tmp_path: Path) -> None:
    """All-or-nothing stays for a file whose supplier cannot be told (`--supplier` is for the
    whole folder); the line says so and names the hostile file for what it is."""
    day, warehouse, _queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "inv.xml").write_bytes(XXE)
    (folder / "stranger.xml").write_text(
        ubl_writer.write(_doc(f"Z-{warehouse}-1", s.a, day, "PO-NONE"), PartyIds(name="Z")))
    line = _one_error_line(await _import(stack, day, warehouse, folder))
    assert "do not name their supplier (e.g. stranger.xml)" in line and "nothing imported" in line
    assert "DOCTYPE not allowed in inv.xml" in line
    assert await pool.fetchval("SELECT count(*) FROM invoices WHERE warehouse = $1", warehouse) == 0
