"""The master data files, row by row, without a database: each value's rule, the GSTIN
checksum, the header, BOM and CRLF, and what a file says about itself (a row listed twice, one PO
with two suppliers). Every refusal is one line `file:line: field: why`."""

from __future__ import annotations

from datetime import date

import pytest

from recon.documents import master_fields as f
from recon.documents.master_csv import decode
from recon.documents.master_data import parse_orders, parse_receipts, parse_suppliers
from recon.domain.errors import BadField, MasterDataRefused

ORDERS_HEADER = "po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,unit_price\n"


def _refusal(parse, text: str, file: str = "x.csv") -> str:
    with pytest.raises(MasterDataRefused) as caught:
        parse(text, file)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("text,paise", [("1250.50", 125050), ("1250.5", 125050), ("1250", 125000),
                                        ("0.01", 1), ("0", 0), ("007.10", 710),
                                        ("10000000.00", 1_000_000_000)])
def test_rupees_become_paise_exactly(text: str, paise: int) -> None:
    assert f.rupees_to_paise(text) == paise


def test_rupees_with_three_decimals_are_refused() -> None:
    with pytest.raises(BadField, match=r'at most 2 decimals \(whole paise\), got "12.505"'):
        f.rupees_to_paise("12.505")


@pytest.mark.parametrize("text", ["-5", "1,250.50", "₹12", "1e3", "12.", ".5", "", "10000000.01",
                                  "nan", "1 250"])
def test_other_prices_are_refused(text: str) -> None:
    with pytest.raises(BadField):
        f.rupees_to_paise(text)


@pytest.mark.parametrize("text", ["-3", "0", "1.0", "+4", "2147483648", "", "3 "])
def test_ordered_quantities_are_whole_numbers_above_zero(text: str) -> None:
    with pytest.raises(BadField, match="must be a whole number above 0"):
        f.whole_number(text, minimum=1)


def test_received_quantity_may_be_zero() -> None:
    assert f.whole_number("0", minimum=0) == 0
    assert f.whole_number("2147483647", minimum=0) == 2_147_483_647


@pytest.mark.parametrize("text", ["2026-02-30", "13/10/2026", "20261013", "2026-1-3", ""])
def test_dates_are_iso(text: str) -> None:
    with pytest.raises(BadField, match="must be a date YYYY-MM-DD"):
        f.iso_date(text)


@pytest.mark.parametrize("good", ["27AAPFU0939F1ZV", "29AAGCB7383J1Z4", "03AABCS4821K1ZJ",
                                  "29aacck7315m1z5"])
def test_valid_gstins_pass_the_checksum(good: str) -> None:
    assert f.gstin(good) == good.upper()


def test_a_gstin_with_a_typing_error_fails_the_checksum() -> None:
    with pytest.raises(BadField, match="check character is W, the GSTIN checksum gives V"):
        f.gstin("27AAPFU0939F1ZW")
    with pytest.raises(BadField, match="check character"):
        f.gstin("27AAPFU0938F1ZV")  # one digit of the PAN mistyped


@pytest.mark.parametrize("bad,why", [("27AAPFU0939F1Z", "15-character"),
                                     ("27AAPF00939F1ZV", "15-character"),
                                     ("27AAPFU0939F0ZV", "15-character"),
                                     ("27AAPFU0939F1YV", "15-character"),
                                     ("00AAPFU0939F1ZV", "state code 00"),
                                     ("45AAPFU0939F1ZV", "state code 45")])
def test_gstin_shape_and_state_code(bad: str, why: str) -> None:
    with pytest.raises(BadField, match=why):
        f.gstin(bad)


def test_an_empty_gstin_is_none() -> None:
    assert f.gstin("") is None


def test_orders_with_bom_crlf_and_any_column_order() -> None:
    data = ("\ufeffsku,po_number,supplier_id,warehouse,ordered_on,description,qty_ordered,"
            "unit_price\r\nSKU-1,PO-1,S1,ldh,2026-10-01,\"Rice, 5kg\",200,1250.50\r\n\r\n"
            "SKU-2,PO-1,S1,ldh,2026-10-01,Oil,5,99\r\n").encode()
    rows = parse_orders(decode(data, "o.csv"), "o.csv")
    assert [(r.line, r.po_number, r.sku, r.description, r.qty_ordered, r.unit_price_paise)
            for r in rows] == [(2, "PO-1", "SKU-1", "Rice, 5kg", 200, 125050),
                               (4, "PO-1", "SKU-2", "Oil", 5, 9900)]
    assert rows[0].ordered_on == date(2026, 10, 1)


def test_the_line_named_is_the_files_physical_line() -> None:
    text = (ORDERS_HEADER + "PO-1,S1,ldh,2026-10-01,SKU-1,x,1,1\r\n\r\n ,\n"
            "PO-1,S1,ldh,2026-10-01,SKU-2,x,1,1\r\nPO-1,S1,ldh,2026-10-01,SKU-3,x,-3,1\r\n")
    assert _refusal(parse_orders, text, "orders.csv") == (
        'orders.csv:6: qty_ordered: must be a whole number above 0, got "-3"')


def test_header_problems_are_named() -> None:
    assert _refusal(parse_orders, "") == ("x.csv:1: header: the file is empty; the first line "
                                          "must name the columns: " + ORDERS_HEADER.strip())
    assert "missing column(s) unit_price" in _refusal(
        parse_orders, ORDERS_HEADER.replace(",unit_price", ""))
    assert "x.csv:1: header: unknown column 'price'" in _refusal(
        parse_orders, ORDERS_HEADER.replace("unit_price", "unit_price,price"))
    assert "column 'sku' appears twice" in _refusal(parse_orders, ORDERS_HEADER.strip() + ",sku\n")


def test_a_row_with_a_missing_field() -> None:
    assert _refusal(parse_orders, ORDERS_HEADER + "PO-1,S1,ldh,2026-10-01,SKU-1,x,1\n") == (
        "x.csv:2: row: has 7 fields, the header has 8")


def test_a_po_with_two_suppliers_in_one_file() -> None:
    text = ORDERS_HEADER + "PO-1,S1,ldh,2026-10-01,SKU-1,x,1,1\nPO-1,S2,ldh,2026-10-01,SKU-2,x,1,1\n"
    assert _refusal(parse_orders, text) == (
        "x.csv:3: supplier_id: PO-1 has supplier_id S1 on line 2, this line says S2 (one PO, "
        "one supplier_id)")


def test_a_po_line_listed_twice() -> None:
    text = ORDERS_HEADER + "PO-1,S1,ldh,2026-10-01,SKU-1,x,1,1\nPO-1,S1,ldh,2026-10-01,SKU-1,x,2,1\n"
    assert _refusal(parse_orders, text) == "x.csv:3: sku: PO-1 line SKU-1 is also on line 2"


def test_warehouse_codes_are_the_runs_codes() -> None:
    text = ORDERS_HEADER + "PO-1,S1,LDH,2026-10-01,SKU-1,x,1,1\n"
    assert _refusal(parse_orders, text).startswith('x.csv:2: warehouse: must be a warehouse code')


def test_a_control_character_inside_a_value() -> None:
    text = "supplier_id,name,email\nS1,\"Sharma\x00Foods\",a@b.example\n"
    assert _refusal(parse_suppliers, text) == (
        "x.csv:2: name: holds a control character (a line break, tab or NUL inside the value)")


def test_not_utf8_names_the_line() -> None:
    with pytest.raises(MasterDataRefused, match=r"^s.csv:3: encoding: not UTF-8 \(byte 0xe9\)"):
        decode(b"supplier_id,name,email\nS1,a,a@b.example\nS2,Caf\xe9,c@d.example\n", "s.csv")


def test_suppliers_gstin_is_optional_and_checked() -> None:
    rows = parse_suppliers("supplier_id,name,email\nS1,A,a@b.example\n", "s.csv")
    assert rows[0].gstin is None
    text = "supplier_id,name,email,gstin\nS1,A,a@b.example,27AAPFU0939F1ZV\nS2,B,b@b.example,\n"
    assert [r.gstin for r in parse_suppliers(text, "s.csv")] == ["27AAPFU0939F1ZV", None]
    text = ("supplier_id,name,email,gstin\nS1,A,a@b.example,27AAPFU0939F1ZV\n"
            "S2,B,b@b.example,27aapfu0939f1zv\n")
    assert _refusal(parse_suppliers, text) == (
        "x.csv:3: gstin: 27AAPFU0939F1ZV is also on line 2 (one GSTIN is one supplier)")


@pytest.mark.parametrize("email", ["a@b", "a b@c.example", "<a@b.example>", "a@b.example, c@d.example",
                                   "a@-b.example"])
def test_email_is_one_plain_address(email: str) -> None:
    assert "email: must be one e-mail address" in _refusal(
        parse_suppliers, f'supplier_id,name,email\nS1,A,"{email}"\n')


def test_a_receipt_listed_twice() -> None:
    text = ("receipt_id,po_number,sku,warehouse,qty_received,received_on\n"
            "GRN-1,PO-1,SKU-1,ldh,5,2026-10-02\nGRN-1,PO-1,SKU-1,ldh,5,2026-10-02\n")
    assert _refusal(parse_receipts, text) == "x.csv:3: receipt_id: GRN-1 is also on line 2"
