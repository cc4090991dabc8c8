"""The master data files an ERP exports, row by row: suppliers, purchase order lines, goods
receipts and the suppliers' packings (unit conversions). Each parser checks every value and what
the file says about itself (a supplier, PO line or receipt listed twice; one PO given two
suppliers); what the rows say against the books already stored is checked by the store,
set-based, and worded here.

Pure code: text in, rows out (tuples in the order the store copies them), or one
`MasterDataRefused` line naming `file:line: field`.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import NamedTuple

from recon.documents import master_fields as f
from recon.documents.master_csv import field, records, refusal
from recon.documents.master_fields import DEFAULT_FORMATS
from recon.domain.cell_formats import CellFormats
from recon.domain.money import BASE_CURRENCY, amount

SUPPLIER_COLUMNS = ("supplier_id", "name", "email")
SUPPLIER_OPTIONAL = ("gstin", "currency")
ORDER_COLUMNS = ("po_number", "supplier_id", "warehouse", "ordered_on", "sku", "description",
                 "qty_ordered", "unit_price")
ORDER_OPTIONAL = ("tax_rate", "unit")
CONVERSION_COLUMNS = ("supplier_id", "sku", "unit", "per", "base_unit")
HSN_RATE_COLUMNS = ("hsn", "tax_rate", "valid_from")
RECEIPT_COLUMNS = ("receipt_id", "po_number", "sku", "warehouse", "qty_received", "received_on")


class SupplierRow(NamedTuple):
    line: int
    supplier_id: str
    name: str
    email: str
    gstin: str | None  # None: the file gives none (a stored GSTIN stays)
    currency: str | None = None  # None: the file gives none (₹ for a new supplier, else kept)


class OrderLineRow(NamedTuple):
    line: int
    po_number: str
    supplier_id: str
    warehouse: str
    ordered_on: date
    sku: str
    description: str
    qty_ordered: int
    unit_price_paise: int
    tax_rate: Decimal | None = None  # the rate the line was ordered at; None: not stated
    price_exact: Decimal | None = None  # the price in paise when it has a fraction of a paisa
    unit: str = "C62"  # canonical code; pieces when the file has no `unit` column or leaves it empty
    # Whether the file stated the unit. An order line that states none counts pieces for
    # whatever counts pieces, and takes a measure (kg, litre, hour) as billed (recon/store/units.py).
    unit_stated: bool = False


class ConversionRow(NamedTuple):
    """One unit of a supplier's SKU holds `per` of `base_unit` (a BX of 12 C62)."""

    line: int
    supplier_id: str
    sku: str
    unit: str
    per: Decimal
    base_unit: str


class HsnRateRow(NamedTuple):
    line: int
    hsn: str
    tax_rate: Decimal
    valid_from: date


class ReceiptRow(NamedTuple):
    line: int
    receipt_id: str
    po_number: str
    sku: str
    warehouse: str
    qty_received: int
    received_on: date


def parse_suppliers(text: str, file: str) -> list[SupplierRow]:
    rows: list[SupplierRow] = []
    first_of: dict[str, int] = {}
    gstin_of: dict[str, int] = {}
    for line, r in records(text, file, SUPPLIER_COLUMNS, SUPPLIER_OPTIONAL):
        row = SupplierRow(
            line,
            field(file, line, "supplier_id", f.supplier_id, r["supplier_id"]),
            field(file, line, "name", f.text, r["name"]),
            field(file, line, "email", f.email, r["email"]),
            field(file, line, "gstin", f.gstin, r.get("gstin", "")),
            field(file, line, "currency", f.currency, r.get("currency", "")),
        )
        if (seen := first_of.setdefault(row.supplier_id, line)) != line:
            raise refusal(file, line, "supplier_id", f"{row.supplier_id} is also on line {seen}")
        if row.gstin and (seen := gstin_of.setdefault(row.gstin, line)) != line:
            raise refusal(file, line, "gstin", f"{row.gstin} is also on line {seen} (one GSTIN "
                          "is one supplier)")
        rows.append(row)
    return rows


def parse_orders(text: str, file: str, formats: CellFormats = DEFAULT_FORMATS) -> list[OrderLineRow]:
    rows: list[OrderLineRow] = []
    header_of: dict[str, OrderLineRow] = {}
    first_of: dict[tuple[str, str], int] = {}
    for line, r in records(text, file, ORDER_COLUMNS, ORDER_OPTIONAL):
        paise, exact = field(file, line, "unit_price", f.priced, r["unit_price"], formats=formats)
        row = OrderLineRow(
            line,
            field(file, line, "po_number", f.code, r["po_number"]),
            field(file, line, "supplier_id", f.supplier_id, r["supplier_id"]),
            field(file, line, "warehouse", f.warehouse, r["warehouse"]),
            field(file, line, "ordered_on", f.dated, r["ordered_on"], formats=formats),
            field(file, line, "sku", f.code, r["sku"]),
            field(file, line, "description", f.text, r["description"]),
            field(file, line, "qty_ordered", f.whole_number, r["qty_ordered"], minimum=1),
            paise,
            field(file, line, "tax_rate", f.tax_rate, r.get("tax_rate", "")),
            exact,
            field(file, line, "unit", f.unit_code, r.get("unit", "")),
            bool((r.get("unit") or "").strip()),
        )
        head = header_of.setdefault(row.po_number, row)
        for name in ("supplier_id", "warehouse", "ordered_on"):
            if getattr(row, name) != getattr(head, name):
                raise refusal(file, line, name, f"{row.po_number} has {name} "
                              f"{getattr(head, name)} on line {head.line}, this line says "
                              f"{getattr(row, name)} (one PO, one {name})")
        if (seen := first_of.setdefault((row.po_number, row.sku), line)) != line:
            raise refusal(file, line, "sku", f"{row.po_number} line {row.sku} is also on line "
                          f"{seen}")
        rows.append(row)
    return rows


def parse_conversions(text: str, file: str) -> list[ConversionRow]:
    rows: list[ConversionRow] = []
    first_of: dict[tuple[str, str, str], int] = {}
    for line, r in records(text, file, CONVERSION_COLUMNS):
        row = ConversionRow(
            line,
            field(file, line, "supplier_id", f.supplier_id, r["supplier_id"]),
            field(file, line, "sku", f.code, r["sku"]),
            field(file, line, "unit", f.unit_code, r["unit"]),
            field(file, line, "per", f.quantity_per, r["per"]),
            field(file, line, "base_unit", f.unit_code, r["base_unit"]),
        )
        if not r["unit"]:
            raise refusal(file, line, "unit", "must not be empty")
        if row.unit == row.base_unit:
            raise refusal(file, line, "base_unit", f"is {row.unit} itself: a unit holds other "
                          "units")
        key = (row.supplier_id, row.sku, row.unit)
        if (seen := first_of.setdefault(key, line)) != line:
            raise refusal(file, line, "unit", f"{row.unit} of {row.sku} for {row.supplier_id} is "
                          f"also on line {seen}")
        rows.append(row)
    return rows


def parse_hsn_rates(text: str, file: str, formats: CellFormats = DEFAULT_FORMATS) -> list[HsnRateRow]:
    rows: list[HsnRateRow] = []
    first_of: dict[tuple[str, date], int] = {}
    for line, r in records(text, file, HSN_RATE_COLUMNS):
        row = HsnRateRow(
            line,
            field(file, line, "hsn", f.hsn, r["hsn"]),
            field(file, line, "tax_rate", f.required_tax_rate, r["tax_rate"]),
            field(file, line, "valid_from", f.dated, r["valid_from"], formats=formats),
        )
        if (seen := first_of.setdefault((row.hsn, row.valid_from), line)) != line:
            raise refusal(file, line, "valid_from", f"HSN {row.hsn} from {row.valid_from} is "
                          f"also on line {seen}")
        rows.append(row)
    return rows


def parse_receipts(text: str, file: str, formats: CellFormats = DEFAULT_FORMATS) -> list[ReceiptRow]:
    rows: list[ReceiptRow] = []
    first_of: dict[str, int] = {}
    for line, r in records(text, file, RECEIPT_COLUMNS):
        row = ReceiptRow(
            line,
            field(file, line, "receipt_id", f.code, r["receipt_id"]),
            field(file, line, "po_number", f.code, r["po_number"]),
            field(file, line, "sku", f.code, r["sku"]),
            field(file, line, "warehouse", f.warehouse, r["warehouse"]),
            field(file, line, "qty_received", f.whole_number, r["qty_received"], minimum=0),
            field(file, line, "received_on", f.dated, r["received_on"], formats=formats),
        )
        if (seen := first_of.setdefault(row.receipt_id, line)) != line:
            raise refusal(file, line, "receipt_id", f"{row.receipt_id} is also on line {seen}")
        rows.append(row)
    return rows


# ------------------------------------------------------------------ against the books (worded)
# Each takes the row the store found (a mapping with the file's `line` and the stored facts).

def unknown_supplier(file: str, found) -> Exception:
    return refusal(file, found["line"], "supplier_id", f"unknown supplier {found['supplier_id']}"
                   " (load it first: recon load suppliers FILE.csv)")


def gstin_taken(file: str, found) -> Exception:
    return refusal(file, found["line"], "gstin", f"{found['gstin']} belongs to supplier "
                   f"{found['holder']} already (one GSTIN is one supplier)")


def gstin_changed(file: str, found) -> Exception:
    return refusal(file, found["line"], "gstin", f"supplier {found['supplier_id']} is "
                   f"registered as {found['stored']}, the file says {found['gstin']}; a GSTIN "
                   "never changes: a new registration is a new supplier id")


def po_header_changed(file: str, found) -> Exception:
    name = found["field"]
    return refusal(file, found["line"], name, f"{found['po_number']} is stored with {name} "
                   f"{found['stored']}, the file says {found['given']}; a PO keeps its "
                   "supplier, warehouse and order date (raise a new PO instead)")


def price_changed_after_billing(file: str, found) -> Exception:
    if found["stored_unit"] != found["given_unit"]:
        return refusal(file, found["line"], "unit", f"{found['po_number']} line {found['sku']} is "
                       f"already billed ({found['invoice_no']} of {found['supplier_id']}) in "
                       f"{found['stored_unit']}; its unit cannot become {found['given_unit']} "
                       "(put it on a new PO line or PO)")
    cur = found["currency"] or BASE_CURRENCY  # the supplier's: its orders are priced in it
    return refusal(file, found["line"], "unit_price", f"{found['po_number']} line "
                   f"{found['sku']} is already billed ({found['invoice_no']} of "
                   f"{found['supplier_id']}) at the PO price {amount(found['stored'], cur)}; its "
                   f"price cannot become {amount(found['given'], cur)} (put the new price on a new "
                   "PO line or PO)")


def qty_below_books(file: str, found) -> Exception:
    return refusal(file, found["line"], "qty_ordered", f"{found['po_number']} line "
                   f"{found['sku']} cannot shrink from {found['stored']} to {found['given']}: "
                   f"{found['received']} already received and {found['billed']} already billed"
                   " (an order never goes below what the books hold against it)")


def conversion_unknown_supplier(file: str, found) -> Exception:
    return refusal(file, found["line"], "supplier_id", f"unknown supplier {found['supplier_id']}"
                   " (load it first: recon load suppliers FILE.csv)")


def unknown_po(file: str, found) -> Exception:
    return refusal(file, found["line"], "po_number", f"unknown PO {found['po_number']} (load "
                   "it first: recon load orders FILE.csv)")


def receipt_off_po(file: str, found) -> Exception:
    return refusal(file, found["line"], "sku", f"{found['po_number']} has no line "
                   f"{found['sku']}")


def receipt_wrong_warehouse(file: str, found) -> Exception:
    return refusal(file, found["line"], "warehouse", f"{found['po_number']} is for warehouse "
                   f"{found['stored']}, the receipt says {found['given']}")


def receipt_before_order(file: str, found) -> Exception:
    return refusal(file, found["line"], "received_on", f"{found['given']} is before "
                   f"{found['po_number']} was ordered ({found['stored']})")


def receipt_changed(file: str, found) -> Exception:
    return refusal(file, found["line"], "receipt_id", f"{found['receipt_id']} is already loaded"
                   f" with other values ({found['stored']}; the file says {found['given']}); a "
                   "loaded receipt never changes (the nights have counted it)")
