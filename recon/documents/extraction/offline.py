"""The offline extractor: a deterministic parser of the layouts in `recon.documents.layouts`.

It is not a model. It stands in for one when no model is configured so the whole run works with
no network, and it answers through the same interface and leaves the same `model_calls` row.
"""

from __future__ import annotations

import csv
import io
import re

from pydantic import ValidationError

from recon.documents.extraction.schema import (
    MAX_DOCUMENT_CHARS,
    ExtractedInvoice,
    ExtractedLine,
    UnreadableInvoice,
)
from recon.domain.money import parse_rupees

NAME = "offline-parser"

_TABLE_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*([^|]*?)\s*\|\s*(\d+)\s*\|\s*([\d,.]+)\s*\|$")
_LETTER_HEAD = re.compile(r"our bill (\S+) against your order (\S+) for goods")
_LETTER_ROW = re.compile(
    r"^\s*(\d+)\) (\d+) units of (\S+) \((.*)\) at Rs ([\d,.]+) per unit\s*$"
)
_SUPPLIER_TAIL = re.compile(r"\(([A-Za-z0-9_-]+)\)\s*$")


def _field(text: str, label: str) -> str | None:
    match = re.search(rf"^{re.escape(label)}:\s*(.+?)\s*$", text, re.MULTILINE)
    return match.group(1) if match else None


def _parse_table(text: str) -> dict:
    supplier = _field(text, "Supplier") or ""
    sid = _SUPPLIER_TAIL.search(supplier)
    lines = []
    for raw in text.splitlines():
        row = _TABLE_ROW.match(raw.strip())
        if row:
            n, sku, desc, qty, rate = row.groups()
            lines.append((int(n), sku, desc, int(qty), parse_rupees(rate)))
    return {
        "invoice_no": _field(text, "Invoice No"),
        "supplier_id": sid.group(1) if sid else None,
        "po_number": _field(text, "PO Ref"),
        "lines": lines,
    }


def _parse_csv(text: str) -> dict:
    found: dict = {"lines": []}
    in_lines = False
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        head = row[0].strip()
        if in_lines and len(row) == 5:
            found["lines"].append(
                (int(row[0]), row[1].strip(), row[2].strip(), int(row[3]), parse_rupees(row[4]))
            )
        elif head == "invoice_no" and len(row) > 1:
            found["invoice_no"] = row[1].strip()
        elif head == "supplier" and len(row) > 1:
            found["supplier_id"] = row[1].strip()
        elif head == "po" and len(row) > 1:
            found["po_number"] = row[1].strip()
        elif head == "line":
            in_lines = True
    return found


def _parse_letter(text: str) -> dict:
    head = _LETTER_HEAD.search(text)
    sid = None
    for raw in text.splitlines():
        if raw.startswith("Regards,"):
            match = _SUPPLIER_TAIL.search(raw)
            sid = match.group(1) if match else None
    lines = []
    for raw in text.splitlines():
        row = _LETTER_ROW.match(raw)
        if row:
            n, qty, sku, desc, rate = row.groups()
            lines.append((int(n), sku, desc, int(qty), parse_rupees(rate)))
    return {
        "invoice_no": head.group(1) if head else None,
        "po_number": head.group(2) if head else None,
        "supplier_id": sid,
        "lines": lines,
    }


def _layout_of(text: str) -> str | None:
    if text.startswith("TAX INVOICE"):
        return "table"
    if text.startswith("invoice_no,"):
        return "csv"
    if text.startswith("Dear Accounts Team"):
        return "letter"
    return None


_PARSERS = {"table": _parse_table, "csv": _parse_csv, "letter": _parse_letter}


def parse_document(text: str) -> ExtractedInvoice:
    """Read one document or raise UnreadableInvoice with the reason; never guesses."""
    if len(text) > MAX_DOCUMENT_CHARS:
        raise UnreadableInvoice(f"document too large ({len(text)} characters)", text[:200])
    layout = _layout_of(text)
    if layout is None:
        raise UnreadableInvoice("layout not recognised", text[:200])
    try:
        found = _PARSERS[layout](text)
    except (ValueError, csv.Error) as exc:
        raise UnreadableInvoice(f"{layout} layout: {exc}", text[:200]) from exc
    if not found.get("lines"):
        raise UnreadableInvoice(f"{layout} layout: no line items found", text[:200])
    try:
        return ExtractedInvoice(
            invoice_no=found.get("invoice_no") or "",
            supplier_id=found.get("supplier_id") or "",
            po_number=found.get("po_number"),
            lines=[
                ExtractedLine(
                    line_no=n, sku=sku, description=desc, quantity=qty, unit_price_paise=price
                )
                for n, sku, desc, qty, price in found["lines"]
            ],
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UnreadableInvoice(f"{layout} layout: {where}: {first['msg']}", text[:200]) from exc
