"""Tax on real invoices (issue 37 item 1; docs/books.md "Tax"), on documents written in each
standard's own shape and imported through `recon import`:

- an over-billed ₹600 at 18 % claims ₹600 + CGST ₹54 + SGST ₹54 within a state (GST e-invoice)
  and ₹600 + IGST ₹108 between states, in the ledger's parts and on a GST debit note;
- a rate other than the PO line's (18 % billed, 5 % ordered: the orders CSV's `tax_rate`) is a
  `tax` mismatch with its evidence, in UBL and in CII, claiming the over-charged tax.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client

from recon.documents.formats.reading import PartyIds
from recon.documents.layouts import Document, DocumentLine
from recon.tools import cii_writer, gst_writer, ubl_writer
from recon.tools.seed_formats import gstin_check
from tests.helpers import inprocess_worker, recon_cli, settings_for, start

pytestmark = pytest.mark.slow

OURS = "03AAACD1234E1Z5"  # the buyer the GST writer writes by default: Punjab (03)
PARTS = ("taxable_paise", "cgst_paise", "sgst_paise", "igst_paise", "cess_paise", "vat_paise")


def _gstin(state: str, seed: str) -> str:
    digits = int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16) % 10_000
    first = f"{state}AAACT{digits:04d}Q1Z"
    return first + gstin_check(first)


async def _supplier(pool: asyncpg.Pool, sid: str, gstin: str) -> None:
    await pool.execute("INSERT INTO suppliers (supplier_id, name, email, gstin) VALUES"
                       " ($1, $1 || ' Ltd', lower($1) || '@supplier.example', $2)", sid, gstin)


async def _order_and_receipt(pool: asyncpg.Pool, po: str, sid: str, wh: str, day: str) -> None:
    await pool.execute("INSERT INTO purchase_orders VALUES ($1, $2, $3, $4::text::date)",
                       po, sid, wh, day)
    await pool.execute("INSERT INTO po_lines VALUES ($1, 'SKU-1001', 'Rice', 10, 10000)", po)
    await pool.execute("INSERT INTO goods_receipts (po_number, sku, warehouse, qty_received,"
                       " received_on) VALUES ($1, 'SKU-1001', $2, 10, $3::text::date)",
                       po, wh, day)


def _doc(number: str, sid: str, day: str, po: str, price: int) -> Document:
    return Document(number, sid, f"{sid} Ltd", day, po, [DocumentLine("SKU-1001", "Rice", 10, price)])


async def _cli(stack, *args: str):
    done = await asyncio.to_thread(recon_cli, stack.env(), *args)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done


async def _night(client: Client, queue: str, day: str, wh: str) -> str:
    settings = settings_for(queue, gate_max_adjustment_share=1.0, own_gstin=OURS)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, wh)
        result = await handle.result()
    assert result.status == "Completed"
    return handle.id


async def _ledger(pool: asyncpg.Pool, wf: str) -> dict[str, tuple]:
    return {r["kind"]: (r["amount_paise"], *(r[p] for p in PARTS)) for r in await pool.fetch(
        "SELECT * FROM ledger_entries WHERE workflow_id = $1", wf)}


async def test_an_over_billing_claims_its_gst_as_the_invoice_split_it(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    """₹160 billed on a PO price of ₹100, 10 received: ₹600 over, at 18 %. Within Punjab the
    claim is ₹600 + CGST 9 % ₹54 + SGST 9 % ₹54; from Delhi (07) it is ₹600 + IGST ₹108."""
    day, wh, queue = night
    tag = wh.upper()
    intra, inter = f"I{tag}", f"X{tag}"
    intra_gstin, inter_gstin = _gstin("03", intra), _gstin("07", inter)
    await _supplier(pool, intra, intra_gstin)
    await _supplier(pool, inter, inter_gstin)
    await _order_and_receipt(pool, f"PO-{tag}-I", intra, wh, day)
    await _order_and_receipt(pool, f"PO-{tag}-X", inter, wh, day)
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "intra.json").write_text(gst_writer.write(
        _doc(f"GST/{tag}/1", intra, day, f"PO-{tag}-I", 16_000), PartyIds(gstin=intra_gstin)))
    (folder / "inter.json").write_text(gst_writer.write(
        _doc(f"GST/{tag}/2", inter, day, f"PO-{tag}-X", 16_000), PartyIds(gstin=inter_gstin)))
    await _cli(stack, "import", str(folder), "--date", day, "--warehouse", wh)
    wf = await _night(client, queue, day, wh)

    rows = {r["supplier_id"]: (r["kind"], r["amount_paise"], *(r[p] for p in PARTS))
            for r in await pool.fetch("SELECT * FROM ledger_entries WHERE workflow_id = $1", wf)}
    assert rows == {
        intra: ("price", 70_800, 60_000, 5_400, 5_400, None, None, None),
        inter: ("price", 70_800, 60_000, None, None, 10_800, None, None),
    }
    notes = {r["supplier_id"]: r["body"] for r in await pool.fetch(
        "SELECT supplier_id, body FROM outbox WHERE workflow_id = $1 AND kind = 'debit-note'",
        wf)}
    note = notes[intra]
    assert f"supplier's GSTIN {intra_gstin}, our GSTIN {OURS}" in note, note
    assert f"Original invoice GST/{tag}/1 of 13 Oct 2026, HSN 10063020" in note, note
    assert "Taxable value:     ₹600" in note, note
    assert "CGST 9%:           ₹54" in note and "SGST 9%:           ₹54" in note, note
    assert "Total claimed:     ₹708" in note and "Total of this debit note: ₹708" in note, note
    other = notes[inter]
    assert "IGST 18%:          ₹108" in other and "CGST 9%" not in other, other
    assert f"supplier's GSTIN {inter_gstin}" in other, other


@pytest.mark.parametrize("fmt", ["ubl", "cii"])
async def test_a_rate_other_than_the_orders_is_a_tax_mismatch(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path, fmt: str) -> None:
    """The orders CSV says 5 %; the invoice (at the PO price) says 18 %: a `tax` mismatch whose
    evidence names both rates and the tax over-charged, ₹130 on ₹1,000, claimed as the place
    of supply splits it (UBL from Delhi: IGST; CII within Punjab: CGST + SGST)."""
    day, wh, queue = night
    tag = wh.upper()
    sid = f"T{tag}"
    state = "07" if fmt == "ubl" else "03"
    gstin = _gstin(state, sid)
    await _supplier(pool, sid, gstin)
    po = f"PO-{tag}-T"
    files = tmp_path / "master"
    files.mkdir()
    (files / "orders.csv").write_text(
        "po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,unit_price,"
        f"tax_rate\n{po},{sid},{wh},{day},SKU-1001,Rice,10,100.00,5\n")
    await _cli(stack, "load", "orders", str(files / "orders.csv"))
    assert await pool.fetchval("SELECT tax_rate FROM po_lines WHERE po_number = $1", po) == 5
    await pool.execute("INSERT INTO goods_receipts (po_number, sku, warehouse, qty_received,"
                       " received_on) VALUES ($1, 'SKU-1001', $2, 10, $3::text::date)",
                       po, wh, day)
    folder = tmp_path / "inbox"
    folder.mkdir()
    doc = _doc(f"{fmt.upper()}-{tag}-1", sid, day, po, 10_000)
    writer = ubl_writer if fmt == "ubl" else cii_writer
    (folder / "invoice.xml").write_text(writer.write(
        doc, PartyIds(gstin=gstin, name=sid), tax_rate=18, buyer_gstin=OURS, hsn="1006"))
    await _cli(stack, "import", str(folder), "--date", day, "--warehouse", wh)
    wf = await _night(client, queue, day, wh)

    mismatch = await pool.fetchrow("SELECT * FROM mismatches WHERE workflow_id = $1", wf)
    assert mismatch["kind"] == "tax", dict(mismatch)
    assert mismatch["detail"] == ("billed tax at 18% on SKU-1001, PO rate 5%: 13000 paise of tax"
                                  " on 100000 paise taxable"), mismatch["detail"]
    split = (None, None, 13_000) if fmt == "ubl" else (6_500, 6_500, None)
    assert await _ledger(pool, wf) == {"tax": (13_000, 0, *split, None, None)}
    note = await pool.fetchval(
        "SELECT body FROM outbox WHERE workflow_id = $1 AND kind = 'debit-note'", wf)
    assert "Billed tax at 18%, expected rate 5%, on 10 units accepted: ₹130" in note, note
    assert "HSN 1006" in note, note
    assert ("IGST 13%:          ₹130" if fmt == "ubl" else "CGST 6.5%:         ₹65") in note, note


async def test_the_orders_rate_billed_is_no_mismatch(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    """18 % billed on a PO line ordered at 18 %, at the PO price: nothing to claim."""
    day, wh, queue = night
    tag = wh.upper()
    sid = f"E{tag}"
    gstin = _gstin("03", sid)
    await _supplier(pool, sid, gstin)
    await _order_and_receipt(pool, f"PO-{tag}-E", sid, wh, day)
    await pool.execute("UPDATE po_lines SET tax_rate = 18 WHERE po_number = $1", f"PO-{tag}-E")
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "e.json").write_text(gst_writer.write(
        _doc(f"GST/{tag}/E", sid, day, f"PO-{tag}-E", 10_000), PartyIds(gstin=gstin)))
    await _cli(stack, "import", str(folder), "--date", day, "--warehouse", wh)
    wf = await _night(client, queue, day, wh)
    assert await pool.fetchval("SELECT count(*) FROM mismatches WHERE workflow_id = $1", wf) == 0
    line = await pool.fetchrow("SELECT * FROM invoice_lines WHERE workflow_id = $1", wf)
    assert (line["hsn"], line["tax_rate"], line["tax_split"], line["taxable_paise"],
            line["cgst_paise"], line["sgst_paise"]) == ("10063020", 18, "cgst+sgst", 100_000,
                                                        9_000, 9_000)


async def test_a_po_line_without_a_rate_expects_its_hsn_rate_on_the_invoice_date(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    """No `tax_rate` on the PO line: the rate of the longest HSN code the line's HSN (99887766,
    a code no other test bills) begins with, in force on the invoice's date: 9988 at 5 % since
    2025-09-22 (not its 12 % of before, nor chapter 99's 18 %). 18 % billed on ₹1,000 (UBL,
    within Punjab): ₹130 over-charged. The rates are master data of the whole database: removed
    at the end, so no other test's night meets them."""
    day, wh, queue = night
    tag = wh.upper()
    sid = f"H{tag}"
    gstin = _gstin("03", sid)
    await _supplier(pool, sid, gstin)
    await _order_and_receipt(pool, f"PO-{tag}-H", sid, wh, day)
    files = tmp_path / "master"
    files.mkdir()
    (files / "hsn.csv").write_text("hsn,tax_rate,valid_from\n9988,12,2017-07-01\n"
                                   "9988,5,2025-09-22\n99,18,2017-07-01\n")
    try:
        loaded = await _cli(stack, "load", "hsn-rates", str(files / "hsn.csv"))
        assert "3 HSN rates: 3 new, 0 changed, 0 unchanged" in loaded.stdout, loaded.stdout
        folder = tmp_path / "inbox"
        folder.mkdir()
        (folder / "h.xml").write_text(ubl_writer.write(
            _doc(f"UBL/{tag}/H", sid, day, f"PO-{tag}-H", 10_000), PartyIds(gstin=gstin),
            buyer_gstin=OURS, hsn="99887766"))
        await _cli(stack, "import", str(folder), "--date", day, "--warehouse", wh)
        wf = await _night(client, queue, day, wh)
    finally:
        await pool.execute("DELETE FROM hsn_tax_rates WHERE hsn IN ('9988', '99')")
    mismatch = await pool.fetchrow("SELECT * FROM mismatches WHERE workflow_id = $1", wf)
    assert (mismatch["kind"], mismatch["detail"]) == (
        "tax", "billed tax at 18% on SKU-1001, rate of HSN 9988 5%: 13000 paise of tax on "
        "100000 paise taxable"), dict(mismatch)
    assert await _ledger(pool, wf) == {"tax": (13_000, 0, 6_500, 6_500, None, None, None)}
