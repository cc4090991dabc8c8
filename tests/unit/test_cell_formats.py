"""Dates and amounts as an Indian ERP writes them, taken only when declared (recon/domain/
cell_formats.py): the declared spelling is read exactly, a misgrouped amount and an undeclared
DD-MM-YYYY date are refused by line, and the default reads what it always read."""

from __future__ import annotations

from datetime import date

import pytest

from recon.documents.master_data import parse_orders, parse_receipts
from recon.domain.cell_formats import CellFormats
from recon.domain.errors import BadField, MasterDataRefused

INDIAN = CellFormats("DD-MM-YYYY", "indian")
HEAD = "po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,unit_price\n"


@pytest.mark.parametrize(("value", "plain"), [
    ("1,45,000.00", "145000.00"), ("12,34,56,789.50", "123456789.50"), ("1,000", "1000"),
    ("999.99", "999.99"), ("145000.00", "145000.00"),
])
def test_indian_grouping_is_read_exactly(value: str, plain: str) -> None:
    assert INDIAN.plain_amount(value) == plain


@pytest.mark.parametrize("value", ["14,5000.00", "1,45,00.00", "145,000.00", ",145000", "1,,000"])
def test_misgrouped_amounts_are_refused(value: str) -> None:
    with pytest.raises(BadField, match="Indian grouping"):
        INDIAN.plain_amount(value)


@pytest.mark.parametrize(("declared", "value"), [
    ("DD-MM-YYYY", "31-10-2026"), ("DD/MM/YYYY", "31/10/2026"), ("DD.MM.YYYY", "31.10.2026"),
    ("YYYY-MM-DD", "2026-10-31"),
])
def test_declared_dates(declared: str, value: str) -> None:
    assert CellFormats(declared).iso_date(value) == "2026-10-31"


def test_a_date_not_in_the_declared_format_or_calendar_is_refused() -> None:
    with pytest.raises(BadField, match="DD-MM-YYYY"):
        INDIAN.iso_date("2026-10-31")
    with pytest.raises(BadField, match="no day of the calendar"):
        INDIAN.iso_date("31-02-2026")


def test_unknown_formats_are_refused() -> None:
    with pytest.raises(ValueError, match="--date-format"):
        CellFormats.of("MM/DD/YY", None)
    with pytest.raises(ValueError, match="--amount-format"):
        CellFormats.of(None, "western")


def test_a_tally_order_file_loads_when_declared() -> None:
    text = HEAD + "PO-1,S1,ldh,05-11-2026,SKU-1,Rice 25kg,10,\"1,45,000.00\"\n"
    [row] = parse_orders(text, "orders.csv", INDIAN)
    assert (row.ordered_on, row.unit_price_paise) == (date(2026, 11, 5), 14_500_000)


def test_undeclared_the_same_file_is_refused_as_before() -> None:
    text = HEAD + "PO-1,S1,ldh,05-11-2026,SKU-1,Rice 25kg,10,145000.00\n"
    with pytest.raises(MasterDataRefused) as refused:
        parse_orders(text, "orders.csv")
    assert str(refused.value) == 'orders.csv:2: ordered_on: must be a date YYYY-MM-DD, got "05-11-2026"'
    grouped = HEAD + "PO-1,S1,ldh,2026-11-05,SKU-1,Rice 25kg,10,\"1,45,000.00\"\n"
    with pytest.raises(MasterDataRefused, match="orders.csv:2: unit_price: must be rupees like"):
        parse_orders(grouped, "orders.csv")


def test_a_misgrouped_amount_names_its_line() -> None:
    text = HEAD + ("PO-1,S1,ldh,05-11-2026,SKU-1,Rice,10,\"1,450.00\"\n"
                   "PO-1,S1,ldh,05-11-2026,SKU-2,Dal,10,\"14,5000.00\"\n")
    with pytest.raises(MasterDataRefused) as refused:
        parse_orders(text, "orders.csv", INDIAN)
    assert str(refused.value).startswith('orders.csv:3: unit_price: must be rupees in Indian grouping')


def test_receipts_take_the_declared_date() -> None:
    text = ("receipt_id,po_number,sku,warehouse,qty_received,received_on\n"
            "GRN-1,PO-1,SKU-1,ldh,10,06/11/2026\n")
    [row] = parse_receipts(text, "receipts.csv", CellFormats("DD/MM/YYYY"))
    assert row.received_on == date(2026, 11, 6)
