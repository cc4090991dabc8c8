"""Master data against the books, on the session's real Postgres: every refusal names its file
line, nothing of a refused file is written, a second load of the same file changes nothing, a
receipt id reused with other values and a price change after billing are refused by name, and a
PO line's quantity may grow but never drop below what is received or billed against it."""

from __future__ import annotations

import asyncio
import zlib
from pathlib import Path

import asyncpg
import pytest

from recon.documents.master_fields import gstin_check_character
from recon.documents.master_load import load_orders, load_receipts, load_suppliers
from recon.domain.errors import MasterDataRefused

ORDERS = "po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,unit_price\n"
RECEIPTS = "receipt_id,po_number,sku,warehouse,qty_received,received_on\n"


def _gstin(seed: int) -> str:
    """A valid GSTIN of Punjab unique to `seed` (the PAN's digits and letter carry it)."""
    digits, letter = seed % 10_000, "ABCDEFGHJKLMNPQRSTUVWXYZ"[seed // 10_000 % 24]
    first14 = f"03AABCT{digits:04d}{letter}1Z"
    return first14 + gstin_check_character(first14)


def _seed(ids) -> int:
    return zlib.crc32(ids["wh"].encode()) % 240_000


@pytest.fixture
def ids(night) -> dict[str, str]:
    """Names of this test alone: the session database is shared by every test."""
    _day, wh, _queue = night
    return {"wh": wh, "s": f"S-{wh}", "po": f"PO-{wh}", "grn": f"GRN-{wh}"}


def _file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


async def _refused(load, pool, path: Path) -> str:
    with pytest.raises(MasterDataRefused) as caught:
        await load(pool, path)
    return str(caught.value)


async def _suppliers(pool, tmp_path, ids, n: int = 2) -> None:
    rows = "".join(f"{ids['s']}{i},Supplier {i},ap{i}@{ids['wh']}.example\n" for i in range(1, n + 1))
    await load_suppliers(pool, _file(tmp_path, "suppliers.csv", "supplier_id,name,email\n" + rows))


async def _orders(pool, tmp_path, ids, *, qty: int = 100, price: str = "1250.50") -> Path:
    s, po, wh = ids["s"], ids["po"], ids["wh"]
    path = _file(tmp_path, "orders.csv", ORDERS
                 + f"{po}-1,{s}1,{wh},2026-10-01,SKU-1,Rice 5kg,{qty},{price}\n"
                 + f"{po}-1,{s}1,{wh},2026-10-01,SKU-2,Oil 1L,50,185\n"
                 + f"{po}-2,{s}2,{wh},2026-10-02,SKU-1,Rice 5kg,10,1200\n")
    await load_orders(pool, path)
    return path


async def test_suppliers_load_once_and_a_reload_changes_nothing(pool, tmp_path, ids) -> None:
    s, g1, g2 = ids["s"], _gstin(_seed(ids)), _gstin(_seed(ids) + 1)
    path = _file(tmp_path, "suppliers.csv", "supplier_id,name,email,gstin\n"
                 f"{s}1,Sharma Foods,ap@sharma.example,{g1}\n{s}2,Kaveri Agro,ap@kaveri.example,\n")
    first = await load_suppliers(pool, path)
    assert (first.rows, first.new, first.changed, first.unchanged) == (2, 2, 0, 0)
    again = await load_suppliers(pool, path)
    assert (again.new, again.changed, again.unchanged) == (0, 0, 2)
    assert again.line().endswith("0 new, 0 changed, 2 unchanged; nothing to change: already loaded")

    # A new e-mail is a change; an empty GSTIN keeps the stored one; a GSTIN may be added.
    path.write_text("supplier_id,name,email,gstin\n"
                    f"{s}1,Sharma Foods,billing@sharma.example,\n{s}2,Kaveri Agro,ap@kaveri.example,{g2}\n")
    changed = await load_suppliers(pool, path)
    assert (changed.new, changed.changed, changed.unchanged) == (0, 2, 0)
    stored = await pool.fetch("SELECT supplier_id, email, gstin FROM suppliers WHERE supplier_id"
                              " = ANY($1) ORDER BY 1", [f"{s}1", f"{s}2"])
    assert [tuple(r) for r in stored] == [(f"{s}1", "billing@sharma.example", g1),
                                          (f"{s}2", "ap@kaveri.example", g2)]

    # One GSTIN is one supplier; a supplier's GSTIN never changes.
    taken = _file(tmp_path, "taken.csv", f"supplier_id,name,email,gstin\n{s}3,New,n@x.example,\n"
                  f"{s}4,Other,o@x.example,{g1}\n")
    assert await _refused(load_suppliers, pool, taken) == (
        f"{taken}:3: gstin: {g1} belongs to supplier {s}1 already (one GSTIN is one supplier)")
    moved = _file(tmp_path, "moved.csv", f"supplier_id,name,email,gstin\n{s}2,Kaveri Agro,"
                  f"ap@kaveri.example,{_gstin(_seed(ids) + 2)}\n")
    assert f"{moved}:2: gstin: supplier {s}2 is registered as {g2}" in await _refused(
        load_suppliers, pool, moved)
    assert not await pool.fetchval("SELECT count(*) FROM suppliers WHERE supplier_id = $1", f"{s}3")


async def test_a_supplier_s_currency_is_loaded_and_kept(pool, tmp_path, ids) -> None:
    """The suppliers file may say what each supplier bills in; an empty cell is ₹ for a new
    supplier and keeps a stored one's, as a GSTIN is kept."""
    s = ids["s"]
    path = _file(tmp_path, "suppliers.csv", "supplier_id,name,email,currency\n"
                 f"{s}1,Müller GmbH,ap@mueller.example,eur\n{s}2,Kaveri Agro,ap@kaveri.example,\n")
    first = await load_suppliers(pool, path)
    assert (first.new, first.changed) == (2, 0)

    async def billed_in() -> list[tuple[str, str]]:
        return [tuple(r) for r in await pool.fetch(
            "SELECT supplier_id, currency FROM suppliers WHERE supplier_id = ANY($1) ORDER BY 1",
            [f"{s}1", f"{s}2"])]

    assert await billed_in() == [(f"{s}1", "EUR"), (f"{s}2", "INR")]
    path.write_text("supplier_id,name,email\n"
                    f"{s}1,Müller GmbH,ap@mueller.example\n{s}2,Kaveri Agro,ap@kaveri.example\n")
    again = await load_suppliers(pool, path)
    assert (again.new, again.changed, again.unchanged) == (0, 0, 2), "no column keeps each"
    assert await billed_in() == [(f"{s}1", "EUR"), (f"{s}2", "INR")]
    path.write_text(f"supplier_id,name,email,currency\n{s}2,Kaveri Agro,ap@kaveri.example,USD\n")
    assert (await load_suppliers(pool, path)).changed == 1
    assert await billed_in() == [(f"{s}1", "EUR"), (f"{s}2", "USD")]
    bad = _file(tmp_path, "bad.csv", f"supplier_id,name,email,currency\n{s}3,X,x@x.example,₹\n")
    assert await _refused(load_suppliers, pool, bad) == (
        f"{bad}:2: currency: must be an ISO currency code like INR or EUR, got \"₹\"")


async def test_orders_unknown_supplier_is_named_and_nothing_is_written(pool, tmp_path, ids) -> None:
    await _suppliers(pool, tmp_path, ids)
    s, po, wh = ids["s"], ids["po"], ids["wh"]
    path = _file(tmp_path, "orders.csv", ORDERS
                 + f"{po}-1,{s}1,{wh},2026-10-01,SKU-1,Rice,5,10\n"
                 + f"{po}-2,{s}9,{wh},2026-10-01,SKU-1,Rice,5,10\n"
                 + f"{po}-3,{s}2,{wh},2026-10-01,SKU-1,Rice,5,10\n")
    assert await _refused(load_orders, pool, path) == (
        f"{path}:3: supplier_id: unknown supplier {s}9 (load it first: recon load suppliers FILE.csv)")
    assert not await pool.fetchval("SELECT count(*) FROM purchase_orders WHERE po_number LIKE $1",
                                   f"{po}-%")


async def test_orders_reload_and_amendments(pool, tmp_path, ids) -> None:
    await _suppliers(pool, tmp_path, ids)
    path = await _orders(pool, tmp_path, ids)
    again = await load_orders(pool, path)
    assert (again.rows, again.new_orders, again.new, again.changed, again.unchanged) == (3, 0, 0, 0, 3)
    assert "nothing to change" in again.line()
    # Before anything is billed a line may be repriced and grow (an amendment).
    path = _file(tmp_path, "amended.csv", path.read_text().replace(",100,1250.50", ",150,1300"))
    amended = await load_orders(pool, path)
    assert (amended.new, amended.changed, amended.unchanged) == (0, 1, 2)
    assert await pool.fetchrow("SELECT qty_ordered, unit_price_paise FROM po_lines WHERE "
                               "po_number = $1 AND sku = 'SKU-1'", f"{ids['po']}-1") == (150, 130000)


async def test_a_po_keeps_its_supplier_and_warehouse(pool, tmp_path, ids) -> None:
    await _suppliers(pool, tmp_path, ids)
    path = await _orders(pool, tmp_path, ids)
    s, po = ids["s"], ids["po"]
    lines = path.read_text().splitlines(keepends=True)
    moved = _file(tmp_path, "moved.csv", "".join(lines[:3]) + lines[3].replace(f",{s}2,", f",{s}1,"))
    assert await _refused(load_orders, pool, moved) == (
        f"{moved}:4: supplier_id: {po}-2 is stored with supplier_id {s}2, the file says {s}1; a PO "
        "keeps its supplier, warehouse and order date (raise a new PO instead)")
    other = _file(tmp_path, "other.csv", ORDERS + f"{po}-9,{s}1,blr,2026-10-01,SKU-1,Rice,5,10\n"
                  + f"{po}-2,{s}2,blr,2026-10-02,SKU-1,Rice 5kg,10,1200\n")
    assert f"{other}:3: warehouse: {po}-2 is stored with warehouse {ids['wh']}, the file says blr" in (
        await _refused(load_orders, pool, other))
    assert not await pool.fetchval("SELECT count(*) FROM purchase_orders WHERE po_number = $1",
                                   f"{po}-9")


async def _bill(pool: asyncpg.Pool, ids, qty: int, *, po_suffix: str = "-1") -> None:
    """One invoice line of a night citing PO line SKU-1 (what step 2 writes)."""
    await pool.execute(
        "INSERT INTO invoice_lines (workflow_id, invoice_no, line_no, supplier_id, po_number, sku,"
        " description, qty, unit_price_paise) VALUES ($1, $2, 1, $3, $4, 'SKU-1', 'Rice', $5, 125050)",
        f"recon-2026-10-13-{ids['wh']}", f"INV-{ids['wh']}", f"{ids['s']}1",
        f"{ids['po']}{po_suffix}", qty)


async def test_a_price_change_after_billing_is_refused(pool, tmp_path, ids) -> None:
    await _suppliers(pool, tmp_path, ids)
    path = await _orders(pool, tmp_path, ids)
    await _bill(pool, ids, 40)
    repriced = _file(tmp_path, "repriced.csv", path.read_text().replace(",100,1250.50", ",100,1300.00"))
    assert await _refused(load_orders, pool, repriced) == (
        f"{repriced}:2: unit_price: {ids['po']}-1 line SKU-1 is already billed (INV-{ids['wh']} of "
        f"{ids['s']}1) at the PO price ₹1,250.50; its price cannot become ₹1,300 (put the new price "
        "on a new PO line or PO)")
    assert await pool.fetchval("SELECT unit_price_paise FROM po_lines WHERE po_number = $1 AND "
                               "sku = 'SKU-1'", f"{ids['po']}-1") == 125050
    # The same price with a larger quantity is an amendment the books allow.
    grown = _file(tmp_path, "grown.csv", path.read_text().replace(",100,1250.50", ",120,1250.50"))
    assert (await load_orders(pool, grown)).changed == 1
    # A fraction of a paisa is a new price too, and so is a new unit (issue 37).
    finer = _file(tmp_path, "finer.csv", path.read_text().replace(",100,1250.50", ",120,1250.5001"))
    assert "its price cannot become" in await _refused(load_orders, pool, finer)
    header, first, *rest = path.read_text().splitlines(keepends=True)
    dozens = _file(tmp_path, "dozens.csv", header.rstrip("\n") + ",unit\n"
                   + first.rstrip("\n").replace(",100,1250.50", ",120,1250.50") + ",DOZ\n")
    assert await _refused(load_orders, pool, dozens) == (
        f"{dozens}:2: unit: {ids['po']}-1 line SKU-1 is already billed (INV-{ids['wh']} of "
        f"{ids['s']}1) in C62; its unit cannot become DZN (put it on a new PO line or PO)")


async def test_a_quantity_never_drops_below_the_books(pool, tmp_path, ids) -> None:
    await _suppliers(pool, tmp_path, ids)
    path = await _orders(pool, tmp_path, ids)
    await load_receipts(pool, _file(tmp_path, "r.csv", RECEIPTS
                                    + f"{ids['grn']}-1,{ids['po']}-1,SKU-1,{ids['wh']},70,2026-10-05\n"))
    await _bill(pool, ids, 80)
    shrunk = _file(tmp_path, "shrunk.csv", path.read_text().replace(",100,1250.50", ",75,1250.50"))
    assert await _refused(load_orders, pool, shrunk) == (
        f"{shrunk}:2: qty_ordered: {ids['po']}-1 line SKU-1 cannot shrink from 100 to 75: 70 already "
        "received and 80 already billed (an order never goes below what the books hold against it)")
    cut = _file(tmp_path, "cut.csv", path.read_text().replace(",100,1250.50", ",80,1250.50"))
    assert (await load_orders(pool, cut)).changed == 1  # cancel the rest: down to what is billed


async def test_receipts_refusals_name_their_line(pool, tmp_path, ids) -> None:
    await _suppliers(pool, tmp_path, ids)
    await _orders(pool, tmp_path, ids)
    po, wh, grn = ids["po"], ids["wh"], ids["grn"]
    good = f"{grn}-1,{po}-1,SKU-1,{wh},60,2026-10-05\n"
    cases = [
        (f"{grn}-2,{po}-7,SKU-1,{wh},5,2026-10-05\n",
         f"po_number: unknown PO {po}-7 (load it first: recon load orders FILE.csv)"),
        (f"{grn}-2,{po}-2,SKU-2,{wh},5,2026-10-05\n", f"sku: {po}-2 has no line SKU-2"),
        (f"{grn}-2,{po}-2,SKU-1,blr,5,2026-10-05\n",
         f"warehouse: {po}-2 is for warehouse {wh}, the receipt says blr"),
        (f"{grn}-2,{po}-2,SKU-1,{wh},5,2026-09-30\n",
         f"received_on: 2026-09-30 is before {po}-2 was ordered (2026-10-02)"),
    ]
    for bad, why in cases:
        path = _file(tmp_path, "receipts.csv", RECEIPTS + good + bad + good.replace("-1,", "-3,", 1))
        assert await _refused(load_receipts, pool, path) == f"{path}:3: {why}"
        assert not await pool.fetchval("SELECT count(*) FROM goods_receipts WHERE receipt_ref"
                                       " LIKE $1", f"{grn}-%")


async def test_a_receipt_id_reused_with_other_values_is_refused(pool, tmp_path, ids) -> None:
    await _suppliers(pool, tmp_path, ids)
    await _orders(pool, tmp_path, ids)
    po, wh, grn = ids["po"], ids["wh"], ids["grn"]
    path = _file(tmp_path, "receipts.csv", RECEIPTS + f"{grn}-1,{po}-1,SKU-1,{wh},60,2026-10-05\n"
                 f"{grn}-2,{po}-1,SKU-2,{wh},50,2026-10-05\n")
    first = await load_receipts(pool, path)
    assert (first.new, first.unchanged) == (2, 0)
    again = await load_receipts(pool, path)
    assert (again.new, again.unchanged) == (0, 2) and "nothing to change" in again.line()
    reused = _file(tmp_path, "reused.csv", RECEIPTS + f"{grn}-3,{po}-2,SKU-1,{wh},5,2026-10-06\n"
                   f"{grn}-1,{po}-1,SKU-1,{wh},65,2026-10-05\n")
    assert await _refused(load_receipts, pool, reused) == (
        f"{reused}:3: receipt_id: {grn}-1 is already loaded with other values ({po}-1 SKU-1 at {wh}:"
        f" 60 on 2026-10-05; the file says {po}-1 SKU-1 at {wh}: 65 on 2026-10-05); a loaded "
        "receipt never changes (the nights have counted it)")
    assert await pool.fetchval("SELECT sum(qty_received) FROM goods_receipts WHERE receipt_ref"
                               " LIKE $1", f"{grn}-%") == 110


async def test_two_loads_at_once_write_the_file_once(pool, tmp_path, ids) -> None:
    await _suppliers(pool, tmp_path, ids)
    s, po, wh = ids["s"], ids["po"], ids["wh"]
    path = _file(tmp_path, "orders.csv", ORDERS + "".join(
        f"{po}-{n},{s}1,{wh},2026-10-01,SKU-{n},Rice,{n},10\n" for n in range(1, 301)))
    first, second = await asyncio.gather(load_orders(pool, path), load_orders(pool, path))
    assert sorted((r.new, r.unchanged, r.new_orders) for r in (first, second)) == [
        (0, 300, 0), (300, 0, 300)]
    assert await pool.fetchval("SELECT count(*) FROM po_lines WHERE po_number LIKE $1",
                               f"{po}-%") == 300


async def test_the_database_holds_the_shapes_too(pool, ids) -> None:
    """Rows written some other way (SQL, another tool) meet the same constraints."""
    with pytest.raises(asyncpg.CheckViolationError):
        await pool.execute("INSERT INTO suppliers (supplier_id, name, email, gstin) VALUES"
                           " ($1, 'x', 'x@y.example', '27aapfu0939f1zv')", f"{ids['s']}x")
    await _suppliers_sql(pool, ids)
    await pool.execute("INSERT INTO goods_receipts (receipt_ref, po_number, sku, warehouse,"
                       " qty_received, received_on) VALUES ($1, $2, 'SKU-1', $3, 1, '2026-10-02')",
                       f"{ids['grn']}-x", f"{ids['po']}-x", ids["wh"])
    with pytest.raises(asyncpg.UniqueViolationError):
        await pool.execute("INSERT INTO goods_receipts (receipt_ref, po_number, sku, warehouse,"
                           " qty_received, received_on) VALUES ($1, $2, 'SKU-1', $3, 2, "
                           "'2026-10-03')", f"{ids['grn']}-x", f"{ids['po']}-x", ids["wh"])
    # Receipts the seed writes carry no number: any count of them.
    for _ in range(2):
        await pool.execute("INSERT INTO goods_receipts (po_number, sku, warehouse, qty_received,"
                           " received_on) VALUES ($1, 'SKU-1', $2, 1, '2026-10-02')",
                           f"{ids['po']}-x", ids["wh"])


async def _suppliers_sql(pool: asyncpg.Pool, ids) -> None:
    await pool.execute("INSERT INTO suppliers (supplier_id, name, email) VALUES ($1, 'x',"
                       " 'x@y.example')", f"{ids['s']}y")
    await pool.execute("INSERT INTO purchase_orders VALUES ($1, $2, $3, '2026-10-01')",
                       f"{ids['po']}-x", f"{ids['s']}y", ids["wh"])


async def test_an_invoice_line_counts_once_whichever_way_a_night_names_it(pool, tmp_path, ids) -> None:
    """Nights that carry the supplier in their keys name an invoice `{supplier}:{number}` in
    their working set; older nights by its number. Billed to date counts the line once."""
    await _suppliers(pool, tmp_path, ids)
    path = await _orders(pool, tmp_path, ids)
    await _bill(pool, ids, 30)
    await pool.execute(
        "INSERT INTO invoice_lines (workflow_id, invoice_no, line_no, supplier_id, po_number, sku,"
        " description, qty, unit_price_paise) VALUES ($1, $2, 1, $3, $4, 'SKU-1', 'Rice', 30, 125050)",
        f"redo-recon-2026-10-13-{ids['wh']}", f"{ids['s']}1:INV-{ids['wh']}", f"{ids['s']}1",
        f"{ids['po']}-1")
    shrunk = _file(tmp_path, "shrunk.csv", path.read_text().replace(",100,1250.50", ",29,1250.50"))
    assert "cannot shrink from 100 to 29: 0 already received and 30 already billed" in (
        await _refused(load_orders, pool, shrunk))
    repriced = _file(tmp_path, "repriced.csv", path.read_text().replace(",100,1250.50", ",100,1"))
    assert f"is already billed (INV-{ids['wh']} of {ids['s']}1)" in (
        await _refused(load_orders, pool, repriced))
    assert (await load_orders(pool, _file(tmp_path, "cut.csv", path.read_text().replace(
        ",100,1250.50", ",30,1250.50")))).changed == 1
