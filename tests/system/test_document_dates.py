"""The document's own date on every GST claim (issue 44; docs/books.md "Dates" and "Tax").

GST e-invoices dated before the night they come in, imported through `recon import`:

- the HSN rate is the one in force on the invoice's own date (CGST Act s.14): billed at the old
  rate before a change, no claim; billed at the new rate where the old applied, a `tax`
  adjustment of the difference;
- the debit note names each original invoice with its own date (CGST Rules r.53(1A));
- a specific cess (`CesNonAdvlAmt`, per unit) is claimed by units on a quantity claim and not at
  all on a price claim, an ad valorem one (`CesAmt`) in proportion to the value claimed;
- a line held awaiting receipt and claimed on a later night keeps its document's date and rate.

The HSN rates are master data of the whole database: each test bills a code no other test bills
(7766…) and removes its rates at the end.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client

from recon.documents.formats.reading import PartyIds
from recon.documents.layouts import Document, DocumentLine
from recon.tools import gst_writer
from tests.helpers import inprocess_worker, settings_for, start
from tests.system.test_tax import OURS, PARTS, _cli, _gstin, _supplier

pytestmark = pytest.mark.slow

HSN = "77665544"  # billed by no other test; its rates are the code 7766's
ORDERED_ON = "2026-10-01"


def _gst_invoice(number: str, sid: str, gstin: str, dated: str, po: str,
                 lines: list[tuple[str, int, int]], rate: int,
                 cess: dict[str, tuple[int, int]] | None = None) -> str:
    """A GST e-invoice dated `dated` (its `DocDtls.Dt`), lines of (sku, qty, price in paise) at
    `rate` %, HSN 77665544; `cess` per SKU: (ad valorem `CesAmt`, specific `CesNonAdvlAmt`), in
    paise, with the item's and the document's totals made to agree."""
    doc = Document(number, sid, f"{sid} Ltd", dated, po,
                   [DocumentLine(sku, "Forks", qty, price) for sku, qty, price in lines])
    upload = gst_writer.upload(doc, PartyIds(gstin=gstin), tax_rate=rate, buyer_gstin=OURS)
    added = 0
    for item in upload["ItemList"]:
        item["HsnCd"] = HSN
        ad_valorem, specific = (cess or {}).get(item["OrdLineRef"], (0, 0))
        if ad_valorem or specific:
            item["CesAmt"] = ad_valorem / 100
            item["CesNonAdvlAmt"] = specific / 100
            item["TotItemVal"] = float(item["TotItemVal"]) + (ad_valorem + specific) / 100
            added += ad_valorem + specific
    if added:
        upload["ValDtls"]["CesVal"] = added / 100
        upload["ValDtls"]["TotInvVal"] = float(upload["ValDtls"]["TotInvVal"]) + added / 100
    return json.dumps(upload, default=gst_writer._json, ensure_ascii=False)


async def _order(pool: asyncpg.Pool, po: str, sid: str, wh: str,
                 lines: dict[str, tuple[int, int, int]]) -> None:
    """{sku: (ordered, price in paise, received on the night)}: no tax rate on the order, so the
    HSN's rate is expected."""
    await pool.execute("INSERT INTO purchase_orders VALUES ($1, $2, $3, $4::text::date)",
                       po, sid, wh, ORDERED_ON)
    for sku, (qty, price, received) in lines.items():
        await pool.execute("INSERT INTO po_lines VALUES ($1, $2, 'Forks', $3, $4)",
                           po, sku, qty, price)
        if received:
            await pool.execute(
                "INSERT INTO goods_receipts (po_number, sku, warehouse, qty_received, received_on)"
                " VALUES ($1, $2, $3, $4, $5::text::date)", po, sku, wh, received, ORDERED_ON)


@asynccontextmanager
async def _hsn_rates(stack, tmp_path: Path, changed_on: str) -> AsyncIterator[None]:
    """HSN 7766 at 12 % from 2017-07-01 and 5 % from `changed_on` (as 8215 changed on
    2025-09-22), loaded with `recon load hsn-rates`; removed afterwards."""
    csv = tmp_path / "hsn.csv"
    csv.write_text(f"hsn,tax_rate,valid_from\n7766,12,2017-07-01\n7766,5,{changed_on}\n")
    pool_url = stack.database_url
    await _cli(stack, "load", "hsn-rates", str(csv))
    try:
        yield
    finally:
        conn = await asyncpg.connect(pool_url)
        try:
            await conn.execute("DELETE FROM hsn_tax_rates WHERE hsn = '7766'")
        finally:
            await conn.close()


async def _import(stack, folder: Path, day: str, wh: str) -> None:
    await _cli(stack, "import", str(folder), "--date", day, "--warehouse", wh)


async def _run(client: Client, settings, day: str, wh: str) -> str:
    handle = await start(client, settings, day, wh)
    result = await handle.result()
    assert result.status == "Completed", result
    return handle.id


async def _entries(pool: asyncpg.Pool, wf: str) -> dict[tuple[str, int, str], tuple]:
    return {(r["supplier_id"], r["line_no"], r["kind"]): (r["amount_paise"], *(r[p] for p in PARTS))
            for r in await pool.fetch("SELECT * FROM live_ledger_entries WHERE workflow_id = $1",
                                      wf)}


async def test_the_hsn_rate_is_the_one_in_force_on_the_invoice_s_own_date(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    """7766 went from 12 % to 5 % on 2026-10-12; both invoices are dated 2026-10-09 and come in
    on the night of 2026-10-13. Billed at 12 % (right on its date): no claim. Billed at 5 %
    where 12 % applied: a `tax` adjustment of the 7 % under-billed on ₹1,000, -₹70 (CGST -₹35,
    SGST -₹35). Read on the night, the first was claimed ₹70 and the second was clean."""
    day, wh, queue = night
    tag = wh.upper()
    old, new = f"O{tag}", f"N{tag}"
    gstins = {sid: _gstin("03", sid) for sid in (old, new)}
    folder = tmp_path / "inbox"
    folder.mkdir()
    for sid, rate in ((old, 12), (new, 5)):
        await _supplier(pool, sid, gstins[sid])
        await _order(pool, f"PO-{sid}", sid, wh, {"SKU-1": (10, 10_000, 10)})
        (folder / f"{sid}.json").write_text(_gst_invoice(
            f"GST/{sid}/1", sid, gstins[sid], "2026-10-09", f"PO-{sid}",
            [("SKU-1", 10, 10_000)], rate))
    async with _hsn_rates(stack, tmp_path, "2026-10-12"):
        await _import(stack, folder, day, wh)
        settings = settings_for(queue, gate_max_adjustment_share=1.0, own_gstin=OURS)
        async with inprocess_worker(settings):
            wf = await _run(client, settings, day, wh)
    assert await _entries(pool, wf) == {
        (new, 1, "tax"): (-7_000, 0, -3_500, -3_500, None, None, None)}
    detail = await pool.fetchval("SELECT detail FROM mismatches WHERE workflow_id = $1", wf)
    assert detail == ("billed tax at 5% on SKU-1, rate of HSN 7766 12%: -7000 paise of tax on"
                      " 100000 paise taxable"), detail
    dates = {r["invoice_no"]: (str(r["issued_on"]), str(r["billed_night"])) for r in await pool.fetch(
        "SELECT invoice_no, issued_on, billed_night FROM line_matches WHERE workflow_id = $1", wf)}
    assert dates == {f"{sid}:GST/{sid}/1": ("2026-10-09", day) for sid in (old, new)}


async def test_the_debit_note_dates_each_original_invoice_with_its_own_date(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    """An invoice dated 12 Oct 2026 over-billed in price and imported on the night of 13 Oct: the
    note names it "of 12 Oct 2026" (r.53(1A)), never the night; both GSTINs, HSN, taxable
    value, rate, each tax and the total are on it."""
    day, wh, queue = night
    sid = f"D{wh.upper()}"
    gstin = _gstin("03", sid)
    await _supplier(pool, sid, gstin)
    await _order(pool, f"PO-{sid}", sid, wh, {"SKU-1": (10, 10_000, 10)})
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "d.json").write_text(_gst_invoice(
        f"GST/{sid}/7", sid, gstin, "2026-10-12", f"PO-{sid}", [("SKU-1", 10, 16_000)], 12))
    async with _hsn_rates(stack, tmp_path, "2026-12-31"):
        await _import(stack, folder, day, wh)
        settings = settings_for(queue, gate_max_adjustment_share=1.0, own_gstin=OURS)
        async with inprocess_worker(settings):
            wf = await _run(client, settings, day, wh)
    note = await pool.fetchval(
        "SELECT body FROM outbox WHERE workflow_id = $1 AND kind = 'debit-note'", wf)
    assert f"GST/{sid}/7 line 1, SKU-1 on order PO-{sid}, invoice of 12 Oct 2026" in note, note
    assert f"Original invoice GST/{sid}/7 of 12 Oct 2026, HSN {HSN}" in note, note
    assert "13 Oct 2026" not in note.split("Invoices:")[1], note
    assert f"supplier's GSTIN {gstin}, our GSTIN {OURS}" in note, note
    assert "Taxable value:     ₹600" in note, note
    assert "CGST 6%:           ₹36" in note and "SGST 6%:           ₹36" in note, note
    assert "Total claimed:     ₹672" in note, note


async def test_a_specific_cess_is_claimed_by_units_never_by_price(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    """One invoice, 12 %, two lines, each with an ad valorem cess (`CesAmt`) and a specific one
    (`CesNonAdvlAmt`, ₹4 a unit):

    - SKU-P: 10 at ₹160 against ₹100, 10 received: a price claim of ₹600. Ad valorem cess ₹16
      on ₹1,600 → ₹6 of it on the ₹600; the specific ₹40 does not grow with the price → none.
    - SKU-Q: 10 billed at ₹100, 6 received, no grace: a quantity claim of 4 units, ₹400. Ad
      valorem ₹10 on ₹1,000 → ₹4; specific ₹4 on each of the 4 units → ₹16; cess ₹20.

    Taken in proportion to value, as before, the price claim carried ₹21 of cess."""
    day, wh, queue = night
    sid = f"C{wh.upper()}"
    gstin = _gstin("03", sid)
    await _supplier(pool, sid, gstin)
    await _order(pool, f"PO-{sid}", sid, wh, {"SKU-P": (10, 10_000, 10), "SKU-Q": (10, 10_000, 6)})
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "c.json").write_text(_gst_invoice(
        f"GST/{sid}/1", sid, gstin, day, f"PO-{sid}",
        [("SKU-P", 10, 16_000), ("SKU-Q", 10, 10_000)], 12,
        cess={"SKU-P": (1_600, 4_000), "SKU-Q": (1_000, 4_000)}))
    async with _hsn_rates(stack, tmp_path, "2026-12-31"):
        await _import(stack, folder, day, wh)
        settings = settings_for(queue, gate_max_adjustment_share=1.0, own_gstin=OURS,
                                receipt_grace_days=0)
        async with inprocess_worker(settings):
            wf = await _run(client, settings, day, wh)
    stored = {r["sku"]: (r["cess_paise"], r["cess_specific_paise"]) for r in await pool.fetch(
        "SELECT sku, cess_paise, cess_specific_paise FROM invoice_lines WHERE workflow_id = $1",
        wf)}
    assert stored == {"SKU-P": (1_600, 4_000), "SKU-Q": (1_000, 4_000)}
    assert await _entries(pool, wf) == {
        (sid, 1, "price"): (60_000 + 3_600 * 2 + 600, 60_000, 3_600, 3_600, None, 600, None),
        (sid, 2, "qty"): (40_000 + 2_400 * 2 + 2_000, 40_000, 2_400, 2_400, None, 2_000, None),
    }


async def test_a_held_line_claimed_later_keeps_its_document_s_date_and_rate(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    """An invoice dated 2026-10-11, at 12 % (7766's rate until it changed on 2026-10-12), bills
    10 where 6 came: held on the night of 2026-10-13 (grace 2 days), claimed on the night of
    2026-10-15 when the 4 have not come. The claim is 4 units at ₹100 with the invoice's 12 %
    (CGST ₹24 + SGST ₹24) and no `tax` claim: the rate is read on the document's date, not on
    the night that claims it."""
    day, wh, queue = night
    later = "2026-10-15"
    sid = f"L{wh.upper()}"
    gstin = _gstin("03", sid)
    await _supplier(pool, sid, gstin)
    await _order(pool, f"PO-{sid}", sid, wh, {"SKU-1": (10, 10_000, 6)})
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "l.json").write_text(_gst_invoice(
        f"GST/{sid}/1", sid, gstin, "2026-10-11", f"PO-{sid}", [("SKU-1", 10, 10_000)], 12))
    async with _hsn_rates(stack, tmp_path, "2026-10-12"):
        await _import(stack, folder, day, wh)
        settings = settings_for(queue, gate_max_adjustment_share=1.0, own_gstin=OURS,
                                receipt_grace_days=2)
        async with inprocess_worker(settings):
            first = await _run(client, settings, day, wh)
            held = await pool.fetchrow("SELECT * FROM held_lines WHERE workflow_id = $1", first)
            assert (str(held["issued_on"]), str(held["billed_night"]), str(held["held_until"])) \
                == ("2026-10-11", day, later), dict(held)
            assert await _entries(pool, first) == {}
            second = await _run(client, settings, later, wh)
    carried = await pool.fetchrow("SELECT * FROM line_matches WHERE workflow_id = $1", second)
    assert (str(carried["issued_on"]), str(carried["billed_night"]), carried["carried_from"]) \
        == ("2026-10-11", day, first), dict(carried)
    assert await _entries(pool, second) == {
        (sid, 1, "qty"): (40_000 + 2_400 * 2, 40_000, 2_400, 2_400, None, None, None)}
