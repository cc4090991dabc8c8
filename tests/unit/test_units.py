"""Units of measure and exact prices without a database (issue 37, items 2 and 3): the synonym
table, the conversions that are facts and a supplier's packs, restating a line exactly in its PO
unit (or saying why not), the orders file's `unit` and 4-decimal `unit_price`, the
`unit_conversions.csv` rows, and the exact price a document's line bills."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from recon.documents import master_fields as f
from recon.documents.formats.checks import as_invoice, exact_price
from recon.documents.formats.reading import INVOICE, PartyIds, Reading, ReadingLine
from recon.documents.master_data import parse_conversions, parse_orders
from recon.domain import units
from recon.domain.errors import BadField, MasterDataRefused
from recon.domain.money import rupees


@pytest.mark.parametrize("code, canonical", [
    ("PCE", "C62"), ("h87", "C62"), ("PCS", "C62"), ("NOS", "C62"), (" C62 ", "C62"),
    ("DOZ", "DZN"), ("DZN", "DZN"), ("KGS", "KGM"), ("CTN", "CT"), ("BOX", "BX"), ("BAG", "BG"),
    ("XPP", "C62"), ("XBX", "BX"), ("LTR", "LTR"), ("XYZ", "XYZ")])
def test_synonyms_read_to_one_code(code: str, canonical: str) -> None:
    assert units.canonical(code) == canonical


def test_facts_and_packs_convert_both_ways_and_nothing_is_guessed() -> None:
    assert units.factor("DZN", "C62") == 12
    assert units.factor("C62", "DZN") == Fraction(1, 12)
    assert units.factor("GRO", "DZN") == 12
    assert units.factor("TNE", "GRM") == 1_000_000
    box = [units.Pack("BX", Decimal(12), "C62")]
    assert units.factor("BX", "DZN", box) == 1, "a box of 12 is a dozen"
    assert units.factor("BX", "C62") is None, "a box holds what its supplier says, no constant"
    assert units.factor("KGM", "C62") is None


def test_a_line_is_restated_exactly_in_the_po_unit() -> None:
    two_dozen = units.restate(2, Decimal(12_000), "DZN", "C62")
    assert (two_dozen.qty, two_dozen.price, two_dozen.problem) == (24, Decimal(1_000), None)
    box = [units.Pack("BX", Decimal(12), "C62")]
    one_box = units.restate(1, Decimal(10_000), "BX", "C62", box)
    assert one_box.qty == 12 and one_box.price == Decimal("833.333333"), "6 decimals of a paisa"
    assert units.restate(5, Decimal(100), "C62", "DZN").problem == \
        "5 C62 is 0.4167 DZN, not a whole number"
    assert units.restate(1, Decimal(100), "CS", "C62").problem == "no conversion from CS to C62"


def test_the_orders_file_takes_a_unit_and_a_price_of_four_decimals() -> None:
    assert f.unit_price("10.004") == (1_000, Decimal("1000.4"))
    assert f.unit_price("10.0025") == (1_000, Decimal("1000.25"))
    assert f.unit_price("10.005") == (1_001, Decimal("1000.5")), "paise half up beside it"
    assert f.unit_price("1250.50") == (125_050, None)
    with pytest.raises(BadField, match="at most 4 decimals"):
        f.unit_price("10.00001")
    assert f.unit_code("") == "C62" and f.unit_code("pce") == "C62" and f.unit_code("DOZ") == "DZN"
    with pytest.raises(BadField, match="unit code"):
        f.unit_code("BOXES")
    rows = parse_orders("po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,"
                        "unit_price,unit\nPO-1,S001,ldh,2026-10-01,SKU-1,Pens,24,10.004,PCE\n"
                        "PO-1,S001,ldh,2026-10-01,SKU-2,Ink,2,5,\n", "orders.csv")
    assert [(r.unit_price_paise, r.price_exact, r.unit) for r in rows] == [
        (1_000, Decimal("1000.4"), "C62"), (500, None, "C62")]


def test_unit_conversions_rows() -> None:
    header = "supplier_id,sku,unit,per,base_unit\n"
    rows = parse_conversions(header + "S001,SKU-1,BOX,12,PCE\nS001,SKU-2,BAG,2.5,KGS\n", "u.csv")
    assert [(r.unit, r.per, r.base_unit) for r in rows] == [
        ("BX", Decimal(12), "C62"), ("BG", Decimal("2.5"), "KGM")]
    for body, why in [("S001,SKU-1,BX,0,C62\n", "u.csv:2: per: must be a number above 0"),
                      ("S001,SKU-1,BX,12,BOX\n", "u.csv:2: base_unit: is BX itself"),
                      ("S001,SKU-1,BX,12,C62\nS001,SKU-1,BOX,6,C62\n",
                       "u.csv:3: unit: BX of SKU-1 for S001 is also on line 2")]:
        with pytest.raises(MasterDataRefused, match=why):
            parse_conversions(header + body, "u.csv")


def _line(qty: str, net: str, price: str | None, unit: str | None = None) -> ReadingLine:
    return ReadingLine(1, "SKU-1", "Bolts", Decimal(qty), Decimal(net),
                       unit_price=Decimal(price) if price else None, unit=unit)


def test_the_billed_price_is_kept_as_the_document_states_it() -> None:
    assert exact_price(_line("100000", "1000400.00", "10.004")) == Decimal("1000.4")
    assert exact_price(_line("3", "31.00", "10.333")) == Decimal("1033.3"), \
        "the line amount is qty x price rounded once: the stated price stands"
    assert exact_price(_line("3", "30.00", "10.333")) == Decimal("1000"), \
        "a line discount moved the net: the net amount over the quantity"
    assert exact_price(_line("3", "10.00", None)) == Decimal("333.333333")
    found = as_invoice(Reading("ubl", INVOICE, "INV-1", "2026-10-13", PartyIds(), "PO-1", "INR",
                               [_line("100000", "1000400.00", "10.004", " DZN ")]), "S001")
    line = found.lines[0]
    assert (line.unit_price_paise, line.price_exact, line.unit) == (1_000, Decimal("1000.4"),
                                                                    "DZN")
    plain = as_invoice(Reading("ubl", INVOICE, "INV-2", None, PartyIds(), "PO-1", "INR",
                               [_line("2", "20.00", "10.00")]), "S001")
    assert "price_exact" not in plain.model_dump_json(), "a whole-paise line stores as before"


def test_a_price_finer_than_the_paisa_is_written_with_its_decimals() -> None:
    assert rupees(Decimal("1000.4")) == "₹10.004"
    assert rupees(Decimal("1000")) == "₹10" == rupees(1000)


def test_a_quantity_with_decimals_is_stored_in_the_finer_unit_that_makes_it_whole() -> None:
    assert units.finer("KGS", Decimal("2.5")) == ("GRM", 1000)
    assert units.finer("DOZ", Decimal("0.5")) == ("C62", 12)
    assert units.finer("C62", Decimal("0.5")) is None and units.finer(None, Decimal("1.5")) is None
    found = as_invoice(Reading("gst-einvoice", INVOICE, "INV-3", None, PartyIds(), "PO-1", "INR",
                               [_line("2.5", "1000.00", "400.00", "KGS")]), "S001")
    line = found.lines[0]
    assert (line.quantity, line.unit, line.unit_price_paise, line.price_exact) == (
        2500, "GRM", 40, None), "₹400 a kilogram is 40 paise a gram"
    with pytest.raises(Exception, match="quantity 2.5 is not a whole number of units"):
        as_invoice(Reading("ubl", INVOICE, "INV-4", None, PartyIds(), "PO-1", "INR",
                           [_line("2.5", "25.00", "10.00", "C62")]), "S001")


def test_an_order_that_states_no_unit_takes_only_a_measure_as_billed():
    from recon.domain.units import Pack, taken_as_billed
    assert taken_as_billed("DAY", "C62", stated=False)
    assert taken_as_billed("KGM", "C62", stated=False)
    assert not taken_as_billed("KGM", "C62", stated=True), "a stated unit converts or parks"
    assert not taken_as_billed("DZN", "C62", stated=False), "a dozen counts pieces"
    assert not taken_as_billed("BX", "C62", stated=False), "a pack of no stated size parks"
    assert not taken_as_billed("BX", "C62", False, [Pack("BX", Decimal(12), "C62")])
