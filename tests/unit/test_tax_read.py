"""Tax as each standard states it, read exactly (docs/books.md "Tax"), and the orders CSV's
optional `tax_rate` (docs/master-data.md): no database, no server."""

from __future__ import annotations

from decimal import Decimal

import pytest

from recon.documents.formats.checks import as_invoice
from recon.documents.formats.detect import read_stored
from recon.documents.formats.reading import PartyIds
from recon.documents.layouts import Document, DocumentLine
from recon.documents.master_data import parse_orders
from recon.domain.errors import MasterDataRefused
from recon.tools import cii_writer, gst_writer, ubl_writer

PUNJAB, DELHI = "03AAACT1234Q1Z5", "07AAACT1234Q1Z5"  # shapes only: the readers check no checksum
OURS = "03AAACD1234E1Z5"
DOC = Document("INV-1", "S1", "S1 Ltd", "2026-10-13", "PO-1",
               [DocumentLine("SKU-1", "Rice", 10, 16_000)])
ORDERS = ("po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,unit_price"
          "{extra}\nPO-1,S1,ldh,2026-10-01,SKU-1,Rice,10,100.00{value}\n")


def _line(text: str) -> dict:
    return as_invoice(read_stored(text), "S1").lines[0].model_dump()


def test_a_gst_einvoice_states_its_parts_and_hsn() -> None:
    intra = _line(gst_writer.write(DOC, PartyIds(gstin=PUNJAB)))
    assert (intra["hsn"], intra["tax_rate"], intra["tax_split"], intra["taxable_paise"],
            intra["cgst_paise"], intra["sgst_paise"], intra["igst_paise"]) == \
        ("10063020", Decimal("18"), "cgst+sgst", 160_000, 14_400, 14_400, 0)
    inter = _line(gst_writer.write(DOC, PartyIds(gstin=DELHI)))
    assert (inter["tax_split"], inter["igst_paise"], inter["cgst_paise"]) == ("igst", 28_800, 0)


@pytest.mark.parametrize("writer", [ubl_writer, cii_writer])
def test_ubl_and_cii_state_category_rate_and_hsn_and_the_place_of_supply_splits(writer) -> None:
    intra = _line(writer.write(DOC, PartyIds(gstin=PUNJAB), tax_rate=5, buyer_gstin=OURS,
                               hsn="1006"))
    assert (intra["hsn"], intra["tax_category"], intra["tax_rate"], intra["tax_split"]) == \
        ("1006", "S", Decimal("5"), "cgst+sgst")
    assert _line(writer.write(DOC, PartyIds(gstin=DELHI), buyer_gstin=OURS))["tax_split"] == "igst"
    # no buyer GSTIN (an EU VAT invoice, say): a tax the document does not divide by state
    assert _line(writer.write(DOC, PartyIds(vat_id="DE123456789")))["tax_split"] == "vat"


def test_a_document_without_tax_stores_what_it_stored_before() -> None:
    line = as_invoice(read_stored(gst_writer.write(DOC, PartyIds(gstin=PUNJAB))), "S1").lines[0]
    bare = line.model_copy(update={k: None for k in ("hsn", "tax_category", "tax_rate",
                                                     "tax_split", "taxable_paise", "cgst_paise",
                                                     "sgst_paise", "igst_paise", "cess_paise",
                                                     "unit")})  # the unit: issue 37 item 2
    assert bare.model_dump_json() == ('{"line_no":1,"sku":"SKU-1","description":"Rice",'
                                      '"quantity":10,"unit_price_paise":16000}')


@pytest.mark.parametrize("value,rate", [("18", Decimal("18")), ("0.25", Decimal("0.25")),
                                        ("5%", Decimal("5")), ("", None)])
def test_the_orders_csv_may_state_a_tax_rate(value: str, rate: Decimal | None) -> None:
    row = parse_orders(ORDERS.format(extra=",tax_rate", value=f",{value}"), "orders.csv")[0]
    assert row.tax_rate == rate
    assert parse_orders(ORDERS.format(extra="", value=""), "orders.csv")[0].tax_rate is None


@pytest.mark.parametrize("value", ["18.00001", "101", "-5", "eighteen", "18 %"])
def test_a_tax_rate_that_is_not_a_rate_is_refused_in_one_line(value: str) -> None:
    with pytest.raises(MasterDataRefused, match=r"orders.csv:2: tax_rate: must be a tax rate"):
        parse_orders(ORDERS.format(extra=",tax_rate", value=f",{value}"), "orders.csv")


def test_hsn_rates_are_codes_rates_and_dates() -> None:
    from datetime import date

    from recon.documents.master_data import parse_hsn_rates

    rows = parse_hsn_rates("hsn,tax_rate,valid_from\n1006,5,2025-09-22\n", "hsn.csv")
    assert [(r.hsn, r.tax_rate, r.valid_from) for r in rows] == \
        [("1006", Decimal("5"), date(2025, 9, 22))]
    for bad, why in (("1,5,2025-09-22", "hsn: must be an HSN code of 2 to 8 digits"),
                     ("1006,,2025-09-22", "tax_rate: must be a tax rate"),
                     ("1006,5,22/09/2025", "valid_from: must be a date")):
        with pytest.raises(MasterDataRefused, match=f"hsn.csv:2: {why}"):
            parse_hsn_rates(f"hsn,tax_rate,valid_from\n{bad}\n", "hsn.csv")
    with pytest.raises(MasterDataRefused, match="hsn.csv:3: valid_from: HSN 1006 from 2025-09-22"
                                                " is also on line 2"):
        parse_hsn_rates("hsn,tax_rate,valid_from\n1006,5,2025-09-22\n1006,18,2025-09-22\n",
                        "hsn.csv")
