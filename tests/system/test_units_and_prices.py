"""Units of measure and exact prices (issue 37, items 2 and 3), through `recon load` and
`recon import` on documents in each standard's own shape, and a real night:

* a line billed in another unit than its PO line's is restated exactly in the PO's unit before
  it is matched and weighed (2 DZN at ₹120 against 24 PCE at ₹10 reconciles clean, 24 units of
  stock booked), through the facts (a dozen is 12) or the supplier's pack
  (`recon load conversions`); a unit with no known conversion parks the line, naming the unit,
  the SKU and the supplier;
* prices are compared as the documents state them (GST `UnitPrice` with 3 decimals, UBL
  `PriceAmount` over `BaseQuantity`, CII `ChargeAmount` with 4, a PO price with 4): 1,00,000
  units at ₹10.004 against ₹10.00 is a price mismatch of ₹400.00, the amount rounded once.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import asyncpg
from temporalio.client import Client

from recon.documents.formats.reading import PartyIds
from recon.documents.layouts import Document, DocumentLine
from recon.tools import cii_writer, gst_writer, ubl_writer
from tests.helpers import inprocess_worker, recon_cli, settings_for, start
from tests.system.test_import_formats import Suppliers, _import


async def _load(stack, what: str, path: Path, text: str) -> None:
    path.write_text(text)
    done = await asyncio.to_thread(recon_cli, stack.env(), "load", what, str(path))
    assert done.returncode == 0, (done.stdout, done.stderr)


async def _receive(pool: asyncpg.Pool, warehouse: str, day: str, *lines: tuple[str, str, int]):
    for po, sku, qty in lines:
        await pool.execute("INSERT INTO goods_receipts (po_number, sku, warehouse, qty_received,"
                           " received_on) VALUES ($1, $2, $3, $4, $5::text::date)",
                           po, sku, warehouse, qty, day)


def _one(number: str, supplier: str, day: str, po: str, line: DocumentLine) -> Document:
    return Document(number, supplier, f"{supplier} Ltd", day, po, [line])


async def _night(pool: asyncpg.Pool, client: Client, queue: str, day: str, warehouse: str) -> str:
    settings = settings_for(queue, gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        assert (await asyncio.wait_for(handle.result(), 120)).status == "Completed"
    return handle.id


async def test_lines_billed_in_another_unit_are_restated_in_the_po_unit_or_parked(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    day, warehouse, queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    tag = warehouse.upper()
    po = {k: f"PO-{tag}-U{k}" for k in range(1, 7)}
    await _load(stack, "orders", tmp_path / "orders.csv",
                "po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,"
                "unit_price,unit\n"
                f"{po[1]},{s.a},{warehouse},{day},SKU-1,Pens,24,10.00,PCE\n"
                f"{po[2]},{s.c},{warehouse},{day},SKU-1,Pens,24,10.00,H87\n"
                f"{po[3]},{s.c},{warehouse},{day},SKU-1,Pens,24,10.00,\n"
                f"{po[4]},{s.c},{warehouse},{day},SKU-2,Ink,10,50.00,NOS\n"
                f"{po[5]},{s.a},{warehouse},{day},SKU-3,Saffron,2500,0.40,GMS\n"
                f"{po[6]},{s.c},{warehouse},{day},SKU-1,Pens,24,10.00,PCE\n")
    await _load(stack, "conversions", tmp_path / "unit_conversions.csv",
                f"supplier_id,sku,unit,per,base_unit\n{s.c},SKU-1,BX,12,PCE\n")
    await _receive(pool, warehouse, day, *((po[k], "SKU-1", 24) for k in (1, 2, 3)),
                   (po[4], "SKU-2", 10), (po[5], "SKU-3", 2_500),
                   (po[6], "SKU-1", 24))
    folder = tmp_path / "inbox"
    folder.mkdir()
    # 2 dozen at ₹120 a dozen: the PO's 24 pieces at ₹10, in the GST UQC, UBL and a C's box of 12
    (folder / "gst.json").write_text(gst_writer.write(_one(
        f"G-{tag}", s.a, day, po[1], DocumentLine("SKU-1", "Pens", 2, 12_000, unit="DOZ")),
        PartyIds(gstin=s.gstin, name="A Ltd")))
    (folder / "ubl.xml").write_text(ubl_writer.write(_one(
        f"U-{tag}", s.c, day, po[2], DocumentLine("SKU-1", "Pens", 2, 12_000, unit="DZN")),
        PartyIds(name="C")))
    (folder / "cii.xml").write_text(cii_writer.write(_one(
        f"C-{tag}", s.c, day, po[3], DocumentLine("SKU-1", "Pens", 2, 12_000, unit="BX")),
        PartyIds(name="C")))
    # 2.5 kilograms at ₹400 a kilogram: the PO's 2,500 grams at ₹0.40
    (folder / "kilos.json").write_text(gst_writer.write(_one(
        f"W-{tag}", s.a, day, po[5],
        DocumentLine("SKU-3", "Saffron", Decimal("2.5"), 40_000, "KGS", Decimal("400.00"))),
        PartyIds(gstin=s.gstin, name="A Ltd")))
    # 2 dozen at ₹126: ₹10.50 a piece, over the PO's ₹10 (the claim says how it was billed)
    (folder / "dear.xml").write_text(ubl_writer.write(_one(
        f"D-{tag}", s.c, day, po[6], DocumentLine("SKU-1", "Pens", 2, 12_600, unit="DZN")),
        PartyIds(name="C")))
    # a case of ink: C never said how many a case holds
    (folder / "case.xml").write_text(ubl_writer.write(_one(
        f"K-{tag}", s.c, day, po[4], DocumentLine("SKU-2", "Ink", 1, 50_000, unit="CS")),
        PartyIds(name="C")))
    done = await _import(stack, day, warehouse, folder)
    assert done.returncode == 0, done.stderr

    run = await _night(pool, client, queue, day, warehouse)
    claims = await pool.fetch("SELECT invoice_no, kind, detail, taxable_paise FROM mismatches"
                              " WHERE workflow_id = $1", run)
    assert [(c["invoice_no"], c["kind"], c["taxable_paise"], c["detail"]) for c in claims] == [
        (f"{s.c}:D-{tag}", "price", 24 * 50,
         "billed 1050 paise per SKU-1, PO price 1000 (billed as 2 DZN at 12600 paise)")], \
        "the same goods at the same money: nothing to claim; 2 DZN at ₹126 is 24 at ₹10.50"
    stock = {(r["invoice_no"], r["sku"], r["qty"]) for r in await pool.fetch(
        "SELECT invoice_no, sku, qty FROM stock_movements WHERE workflow_id = $1", run)}
    assert stock == {(f"{s.a}:G-{tag}", "SKU-1", 24), (f"{s.c}:U-{tag}", "SKU-1", 24),
                     (f"{s.c}:C-{tag}", "SKU-1", 24), (f"{s.a}:W-{tag}", "SKU-3", 2_500),
                     (f"{s.c}:D-{tag}", "SKU-1", 24)}, \
        "booked in the PO's unit"
    billed = {r["invoice_no"]: (r["qty"], r["unit"], r["unit_price_paise"], r["billed_as"])
              for r in await pool.fetch("SELECT * FROM invoice_lines WHERE workflow_id = $1", run)}
    assert billed[f"{s.c}:C-{tag}"] == (24, "C62", 1_000, "2 BX at 12000 paise")
    parked = await pool.fetch(
        "SELECT invoice_no, reason, evidence FROM parked_items WHERE workflow_id = $1", run)
    assert [(p["invoice_no"], p["reason"]) for p in parked] == [(
        f"{s.c}:K-{tag}",
        f"unit CS of SKU SKU-2 from supplier {s.c}: no conversion from CS to C62 (the unit of "
        f"{po[4]})")]
    assert (f"billed 1 CS of SKU-2 (Ink) at 50000 paise per CS on {po[4]}, ordered in C62"
            in parked[0]["evidence"]), parked[0]["evidence"]


async def test_prices_are_compared_as_the_documents_state_them(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    day, warehouse, queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    tag = warehouse.upper()
    po = {k: f"PO-{tag}-P{k}" for k in range(1, 5)}
    await _load(stack, "orders", tmp_path / "orders.csv",
                "po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,"
                "unit_price\n"
                f"{po[1]},{s.a},{warehouse},{day},SKU-1,Bolts,100000,10.00\n"
                f"{po[2]},{s.c},{warehouse},{day},SKU-1,Bolts,100000,10.00\n"
                f"{po[3]},{s.c},{warehouse},{day},SKU-1,Bolts,100000,10\n"
                f"{po[4]},{s.c},{warehouse},{day},SKU-1,Bolts,1000,10.0025\n")
    await _receive(pool, warehouse, day, *((po[k], "SKU-1", 100_000) for k in (1, 2, 3)),
                   (po[4], "SKU-1", 1_000))
    folder = tmp_path / "inbox"
    folder.mkdir()

    def bolts(qty: int, price: str) -> DocumentLine:
        return DocumentLine("SKU-1", "Bolts", qty, 1_000, price=Decimal(price))

    # GST UnitPrice with 3 decimals
    (folder / "gst.json").write_text(gst_writer.write(
        _one(f"G-{tag}", s.a, day, po[1], bolts(100_000, "10.004")),
        PartyIds(gstin=s.gstin, name="A Ltd")))
    # UBL: ₹1,000.40 per 100 units (BaseQuantity)
    ubl = ubl_writer.write(_one(f"U-{tag}", s.c, day, po[2], bolts(100_000, "10.004")),
                           PartyIds(name="C"))
    per_hundred = ubl.replace(
        '<cbc:PriceAmount currencyID="INR">10.004</cbc:PriceAmount>',
        '<cbc:PriceAmount currencyID="INR">1000.40</cbc:PriceAmount>'
        '<cbc:BaseQuantity unitCode="C62">100</cbc:BaseQuantity>')
    assert per_hundred != ubl
    (folder / "ubl.xml").write_text(per_hundred)
    # CII ChargeAmount with 4 decimals
    (folder / "cii.xml").write_text(cii_writer.write(
        _one(f"C-{tag}", s.c, day, po[3], bolts(100_000, "10.0040")), PartyIds(name="C")))
    # the PO's own price has 4 decimals, and the invoice bills exactly that
    (folder / "same.xml").write_text(ubl_writer.write(
        _one(f"S-{tag}", s.c, day, po[4], bolts(1_000, "10.0025")), PartyIds(name="C")))
    done = await _import(stack, day, warehouse, folder)
    assert done.returncode == 0, done.stderr

    run = await _night(pool, client, queue, day, warehouse)
    ledger = {(r["invoice_no"], r["kind"], r["amount_paise"]) for r in await pool.fetch(
        "SELECT * FROM ledger_entries WHERE workflow_id = $1", run)}
    # ₹400.00 over-billed each (with its 18 % tax, the writers' rate, claimed beside it)
    assert ledger == {(f"{s.a}:G-{tag}", "price", 47_200), (f"{s.c}:U-{tag}", "price", 47_200),
                      (f"{s.c}:C-{tag}", "price", 47_200)}, "₹10.0025 against ₹10.0025: clean"
    assert {r["taxable_paise"] for r in await pool.fetch(
        "SELECT taxable_paise FROM mismatches WHERE workflow_id = $1", run)} == {40_000}
    detail = await pool.fetchval("SELECT detail FROM mismatches WHERE workflow_id = $1"
                                 " AND invoice_no = $2", run, f"{s.a}:G-{tag}")
    assert detail == "billed 1000.4 paise per SKU-1, PO price 1000", detail
    note = await pool.fetchval("SELECT body FROM outbox WHERE workflow_id = $1"
                               " AND kind = 'debit-note' AND supplier_id = $2", run, s.a)
    assert "Billed ₹10.004 a unit, order price ₹10, on 100,000 units accepted: ₹400" in note, note
    assert await pool.fetchval("SELECT count(*) FROM parked_items WHERE workflow_id = $1",
                               run) == 0


async def test_an_order_that_states_no_unit_takes_a_measure_as_billed(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    """Public sample invoices bill days, hours and kilograms (Peppol's base example bills 7
    `DAY`). An order line that states no unit gives nothing to convert those to, so they are
    weighed as billed; a pack of no stated size still parks, and so does a measure against an
    order line that states pieces."""
    day, warehouse, queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    tag = warehouse.upper()
    po = {k: f"PO-{tag}-M{k}" for k in range(1, 5)}
    await _load(stack, "orders", tmp_path / "orders.csv",
                "po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,"
                "unit_price,unit\n"
                f"{po[1]},{s.c},{warehouse},{day},SKU-1,Consulting,7,100.00,\n"
                f"{po[2]},{s.c},{warehouse},{day},SKU-2,Flour,40,30.00,\n"
                f"{po[3]},{s.c},{warehouse},{day},SKU-3,Ink,5,50.00,\n"
                f"{po[4]},{s.c},{warehouse},{day},SKU-4,Oil,3,90.00,C62\n")
    await _receive(pool, warehouse, day, (po[1], "SKU-1", 7), (po[2], "SKU-2", 40),
                   (po[3], "SKU-3", 5), (po[4], "SKU-4", 3))
    folder = tmp_path / "inbox"
    folder.mkdir()
    # 7 days at ₹100 against 7 with no unit: clean
    (folder / "days.xml").write_text(ubl_writer.write(_one(
        f"T-{tag}", s.c, day, po[1], DocumentLine("SKU-1", "Consulting", 7, 10_000, unit="DAY")),
        PartyIds(name="C")))
    # 40 kg at ₹31 against 40 at ₹30 with no unit: a ₹40 price claim, weighed as billed
    (folder / "kilos.xml").write_text(cii_writer.write(_one(
        f"F-{tag}", s.c, day, po[2], DocumentLine("SKU-2", "Flour", 40, 3_100, unit="KGM")),
        PartyIds(name="C")))
    # a box of ink whose size nobody stated: parked, never guessed
    (folder / "box.xml").write_text(ubl_writer.write(_one(
        f"B-{tag}", s.c, day, po[3], DocumentLine("SKU-3", "Ink", 1, 25_000, unit="BX")),
        PartyIds(name="C")))
    # litres against an order line that states pieces: parked
    (folder / "oil.xml").write_text(ubl_writer.write(_one(
        f"L-{tag}", s.c, day, po[4], DocumentLine("SKU-4", "Oil", 3, 9_000, unit="LTR")),
        PartyIds(name="C")))
    done = await _import(stack, day, warehouse, folder)
    assert done.returncode == 0, done.stderr

    run = await _night(pool, client, queue, day, warehouse)
    claims = [(c["invoice_no"], c["kind"], c["taxable_paise"]) for c in await pool.fetch(
        "SELECT invoice_no, kind, taxable_paise FROM mismatches WHERE workflow_id = $1", run)]
    assert claims == [(f"{s.c}:F-{tag}", "price", 40 * 100)], claims
    stock = {(r["invoice_no"], r["qty"]) for r in await pool.fetch(
        "SELECT invoice_no, qty FROM stock_movements WHERE workflow_id = $1", run)}
    assert stock == {(f"{s.c}:T-{tag}", 7), (f"{s.c}:F-{tag}", 40)}, stock
    parked = sorted((p["invoice_no"], p["reason"]) for p in await pool.fetch(
        "SELECT invoice_no, reason FROM parked_items WHERE workflow_id = $1", run))
    assert parked == [
        (f"{s.c}:B-{tag}", f"unit BX of SKU SKU-3 from supplier {s.c}: no conversion from BX to "
                           f"C62 (the unit of {po[3]})"),
        (f"{s.c}:L-{tag}", f"unit LTR of SKU SKU-4 from supplier {s.c}: no conversion from LTR "
                           f"to C62 (the unit of {po[4]})")], parked
