"""`recon import` of real formats through the command line: each document names itself (number,
sender by GSTIN / VAT id / endpoint / PO, lines), credit notes are kept apart and listed in the
summary against our debit notes, and every refusal is one line with nothing written."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client

from recon.documents.formats import facturx
from recon.documents.formats.pdf_text import write_scan_pdf, write_text_pdf
from recon.documents.formats.reading import CREDIT_NOTE, PartyIds
from recon.documents.layouts import Document, DocumentLine, render
from recon.tools import cii_writer, gst_writer, ubl_writer
from recon.tools.seed_formats import gstin_check
from tests.helpers import inprocess_worker, recon_cli, settings_for, start


def _gstin(seed: str) -> str:
    digits = int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16) % 10_000
    first = f"07AAACT{digits:04d}Q1Z"
    return first + gstin_check(first)


class Suppliers:
    """Three suppliers of one test: A by GSTIN, B (EUR) by VAT id and endpoint, C by its PO."""

    def __init__(self, warehouse: str) -> None:
        tag = warehouse.upper()
        self.a, self.b, self.c = f"A{tag}", f"B{tag}", f"C{tag}"
        self.gstin = _gstin(self.a)
        self.vat = f"DE{int(hashlib.sha256(self.b.encode()).hexdigest()[:8], 16) % 10**9:09d}"
        self.endpoint = f"0088:{int(hashlib.sha256(self.b.encode()).hexdigest()[:10], 16):013d}"
        self.po_a, self.po_c = f"PO-{tag}-A", f"PO-{tag}-C"

    async def create(self, pool: asyncpg.Pool, day: str, warehouse: str) -> None:
        for sid in (self.a, self.b, self.c):
            await pool.execute("INSERT INTO suppliers (supplier_id, name, email) VALUES"
                               " ($1, $1 || ' Ltd', lower($1) || '@supplier.example')", sid)
        await pool.execute("UPDATE suppliers SET gstin = $2 WHERE supplier_id = $1",
                           self.a, self.gstin)
        await pool.execute("UPDATE suppliers SET vat_id = $2, peppol_endpoint = $3,"
                           " currency = 'EUR' WHERE supplier_id = $1",
                           self.b, self.vat, self.endpoint)
        for po, sid in ((self.po_a, self.a), (self.po_c, self.c)):
            await pool.execute("INSERT INTO purchase_orders VALUES ($1, $2, $3, $4::text::date)",
                               po, sid, warehouse, day)
            await pool.execute("INSERT INTO po_lines VALUES ($1, 'SKU-1001', 'Rice', 10, 10000)",
                               po)
            await pool.execute("INSERT INTO goods_receipts (po_number, sku, warehouse,"
                               " qty_received, received_on) VALUES ($1, 'SKU-1001', $2, 10,"
                               " $3::text::date)", po, warehouse, day)


def _doc(number: str, supplier: str, day: str, po: str, price: int = 10_000) -> Document:
    return Document(number, supplier, f"{supplier} Ltd", day, po,
                    [DocumentLine("SKU-1001", "Rice", 10, price)])


async def _import(stack, day: str, warehouse: str, folder: Path, *extra: str):
    return await asyncio.to_thread(recon_cli, stack.env(), "import", str(folder), "--date", day,
                                   "--warehouse", warehouse, *extra)


def _one_error_line(done) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.slow
async def test_real_formats_name_themselves_and_credit_notes_stay_apart(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    day, warehouse, queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    folder = tmp_path / "inbox"
    folder.mkdir()
    a_ids = PartyIds(gstin=s.gstin, name="A Ltd")
    b_ids = PartyIds(vat_id=s.vat, endpoint=s.endpoint, name="B GmbH")
    # A bills 120.00 against a PO price of 100.00: a debit note of ₹200 and its IGST for A.
    (folder / "invoice.json").write_text(
        gst_writer.write(_doc(f"GST/{warehouse}/1", s.a, day, s.po_a, 12_000), a_ids))
    (folder / "invoice.xml").write_text(
        ubl_writer.write(_doc(f"EU-{warehouse}-1", s.b, day, "PO-NONE"), b_ids, currency="EUR"))
    (folder / "facturx.pdf").write_bytes(facturx.write(
        cii_writer.write(_doc(f"EU-{warehouse}-2", s.b, day, "PO-NONE"), PartyIds(vat_id=s.vat),
                         currency="EUR"), "a picture of the invoice"))
    (folder / "by-po.xml").write_text(
        ubl_writer.write(_doc(f"C-{warehouse}-1", s.c, day, s.po_c), PartyIds(name="C")))
    (folder / "invoice.pdf").write_bytes(
        write_text_pdf(render(_doc(f"TXT-{warehouse}-1", s.a, day, "PO-NONE"), "table")))
    (folder / "scan.pdf").write_bytes(write_scan_pdf())
    claim = f"DN-{day.replace('-', '')}-{warehouse.upper()}-{s.a}"
    (folder / "credit.json").write_text(gst_writer.write(
        _doc(f"GST/{warehouse}/CN1", s.a, day, s.po_a, 2_000), a_ids, CREDIT_NOTE, [claim]))

    refused = await _import(stack, day, warehouse, folder)
    line = _one_error_line(refused)
    assert "scan.pdf" in line and "--supplier" in line
    assert await pool.fetchval("SELECT count(*) FROM invoices WHERE warehouse = $1",
                               warehouse) == 0, "all or nothing"

    done = await _import(stack, day, warehouse, folder, "--supplier", s.a)
    assert done.returncode == 0, done.stderr
    assert f"imported 6 invoices for {day} at {warehouse}" in done.stdout
    assert "credit notes kept apart (not reconciled): 1" in done.stdout
    # the per-format counts include the credit note: said as documents, not as invoices
    assert "(documents read by format: " in done.stdout, done.stdout
    assert "1 will be parked by the run as unreadable: scan.pdf: scan.pdf: PDF has no text layer" \
        in done.stdout
    stored = {r["invoice_no"]: (r["supplier_id"], r["format"], r["file_name"]) for r in
              await pool.fetch("SELECT * FROM invoices WHERE warehouse = $1", warehouse)}
    assert stored == {
        f"GST/{warehouse}/1": (s.a, "gst-einvoice", "invoice.json"),
        f"EU-{warehouse}-1": (s.b, "ubl", "invoice.xml"),
        f"EU-{warehouse}-2": (s.b, "facturx", "facturx.pdf"),
        f"C-{warehouse}-1": (s.c, "ubl", "by-po.xml"),
        f"TXT-{warehouse}-1": (s.a, "pdf-text", "invoice.pdf"),
        "scan": (s.a, "pdf-scan", "scan.pdf"),  # no number inside: the file's stem, provisional
    }
    credit = await pool.fetchrow("SELECT * FROM credit_notes WHERE supplier_id = $1", s.a)
    assert credit["credit_note_no"] == f"GST/{warehouse}/CN1" and credit["cites"] == [claim]
    assert credit["amount_paise"] == 2_000 * 10 * 118 // 100

    again = await _import(stack, day, warehouse, folder, "--supplier", s.a)
    assert again.returncode == 0 and "6 already there" in again.stdout

    # A night of six invoices with one scan parked is over the gate's default 10 %: not the point.
    settings = settings_for(queue, gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        result = await handle.result()
    assert result.status == "Completed"
    # the run names each invoice by its reference: supplier, then the document's own number
    ledger = {(r["invoice_no"], r["kind"], r["amount_paise"]) for r in await pool.fetch(
        "SELECT * FROM ledger_entries WHERE workflow_id = $1", handle.id)}
    # ₹200 over-billed, and the IGST the invoice charged on it (A is in Delhi, we are in
    # Punjab): 18 % of ₹200, ₹36 (docs/books.md "Tax")
    assert ledger == {(f"{s.a}:GST/{warehouse}/1", "price", 23_600)}
    parked = {r["invoice_no"]: r["reason"] for r in await pool.fetch(
        "SELECT * FROM parked_items WHERE workflow_id = $1 AND line_no IS NULL", handle.id)}
    assert "no text layer" in parked[f"{s.a}:scan"]
    calls = {r["invoice_no"]: r["extractor"] for r in await pool.fetch(
        "SELECT invoice_no, extractor FROM model_calls WHERE workflow_id = $1", handle.id)}
    assert calls[f"{s.a}:GST/{warehouse}/1"] == calls[f"{s.b}:EU-{warehouse}-2"] \
        == "document-reader"
    assert calls[f"{s.a}:TXT-{warehouse}-1"] == "offline-parser"
    summary = await pool.fetchval(
        "SELECT body FROM outbox WHERE workflow_id = $1 AND kind = 'summary'", handle.id)
    assert f"GST/{warehouse}/CN1, ₹236; answers debit note {claim}" in summary


async def test_what_cannot_be_attributed_is_refused_by_name(
        pool: asyncpg.Pool, stack, night, tmp_path: Path) -> None:
    day, warehouse, _queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    a_ids = PartyIds(gstin=s.gstin, name="A Ltd")
    cases = {
        "duplicate": ({"one.json": gst_writer.write(_doc("D-1", s.a, day, "PO-NONE"), a_ids),
                       "two.xml": ubl_writer.write(_doc("D-1", s.a, day, "PO-X", 9_000), a_ids)},
                      "one.json and two.xml all carry invoice number D-1 of " + s.a),
        "stranger": ({"x.xml": ubl_writer.write(_doc("Z-1", s.a, day, "PO-NONE"),
                                                PartyIds(gstin=_gstin("nobody")))},
                     "do not name their supplier (e.g. x.xml)"),
        "currency": ({"eur.xml": ubl_writer.write(_doc("E-1", s.a, day, "PO-NONE"), a_ids,
                                                  currency="EUR")},
                     f"eur.xml is in EUR, and {s.a} bills in INR: amounts are never converted"),
        "two suppliers": ({"both.xml": ubl_writer.write(_doc("T-1", s.a, day, "PO-NONE"),
                                                        PartyIds(gstin=s.gstin,
                                                                 endpoint=s.endpoint))},
                          f"both.xml names more than one supplier ({s.a}, {s.b}"),
        "po of another": ({"po.json": gst_writer.write(_doc("P-1", s.a, day, s.po_c), a_ids)},
                          f"po.json is from {s.a} (GSTIN {s.gstin}) but cites {s.po_c}, an order "
                          f"of {s.c}"),
    }
    for name, (files, expected) in cases.items():
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        for file, text in files.items():
            (folder / file).write_text(text)
        line = _one_error_line(await _import(stack, day, warehouse, folder))
        assert expected in line, (name, line)
    assert await pool.fetchval("SELECT count(*) FROM invoices WHERE warehouse = $1",
                               warehouse) == 0


async def test_recon_supplier_sets_the_ids_documents_are_mapped_by(pool, stack, night) -> None:
    _day, warehouse, _queue = night
    s = Suppliers(warehouse)
    await s.create(pool, _day, warehouse)
    env = stack.env()
    gstin = _gstin(s.c)
    done = await asyncio.to_thread(recon_cli, env, "supplier", s.c, "--gstin", gstin.lower(),
                                   "--currency", "usd")
    assert done.returncode == 0, done.stderr
    assert f"{s.c} {s.c} Ltd: GSTIN {gstin}" in done.stdout and "bills in USD" in done.stdout
    taken = await asyncio.to_thread(recon_cli, env, "supplier", s.a, "--gstin", gstin)
    assert f"{gstin} is already {s.c}'s gstin" in _one_error_line(taken)
    bad = await asyncio.to_thread(recon_cli, env, "supplier", s.a, "--currency", "rupees")
    assert "--currency must be an ISO code" in _one_error_line(bad)
    unknown = await asyncio.to_thread(recon_cli, env, "supplier", "NOPE-" + warehouse)
    assert "unknown supplier" in _one_error_line(unknown)
