"""Invoice documents as suppliers write them: three layouts, plus the unreadable scan.

The seed writes these, the offline extractor reads them, and the model sees them word for word.
"""

from __future__ import annotations

import csv
import io
import random
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from recon.domain.money import group_indian

LAYOUTS = ("table", "csv", "letter")


@dataclass(frozen=True)
class DocumentLine:
    sku: str
    description: str
    qty: int  # a structured writer may state a Decimal (2.5 KGS)
    unit_price_paise: int
    # What the structured writers (recon/tools) may state beyond that: the unit code (None: their
    # default, pieces) and the price in rupees with more decimals than the paisa (10.004).
    unit: str | None = None
    price: Decimal | None = None

    @property
    def amount_paise(self) -> int:
        """The line's amount: quantity x price, rounded once to the paisa, half up."""
        if self.price is None:
            return self.qty * self.unit_price_paise
        return int((self.qty * self.price * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))

    def price_text(self) -> str:
        """The price as a document states it: `10.004`, or rupees and two decimals."""
        if self.price is not None:
            return str(self.price)
        whole, frac = divmod(self.unit_price_paise, 100)
        return f"{whole}.{frac:02d}"


@dataclass(frozen=True)
class Document:
    invoice_no: str
    supplier_id: str
    supplier_name: str
    business_date: str
    po_number: str
    lines: list[DocumentLine]


def _amount(paise: int) -> str:
    whole, frac = divmod(paise, 100)
    return f"{group_indian(whole)}.{frac:02d}"


def _total(doc: Document) -> int:
    return sum(line.qty * line.unit_price_paise for line in doc.lines)


def render_table(doc: Document) -> str:
    rule = "-" * 72
    out = [
        "TAX INVOICE",
        f"Invoice No: {doc.invoice_no}",
        f"Supplier: {doc.supplier_name} ({doc.supplier_id})",
        f"Date: {doc.business_date}",
        f"PO Ref: {doc.po_number}",
        rule,
        "| # | SKU | Description | Qty | Rate |",
    ]
    for n, line in enumerate(doc.lines, 1):
        out.append(
            f"| {n} | {line.sku} | {line.description} | {line.qty} | {_amount(line.unit_price_paise)} |"
        )
    out += [rule, f"Total: {_amount(_total(doc))}"]
    return "\n".join(out) + "\n"


def render_csv(doc: Document) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["invoice_no", doc.invoice_no])
    writer.writerow(["supplier", doc.supplier_id, doc.supplier_name])
    writer.writerow(["date", doc.business_date])
    writer.writerow(["po", doc.po_number])
    writer.writerow(["line", "sku", "description", "qty", "unit_price"])
    for n, line in enumerate(doc.lines, 1):
        writer.writerow([n, line.sku, line.description, line.qty, _amount(line.unit_price_paise)])
    return buf.getvalue()


def render_letter(doc: Document) -> str:
    out = [
        "Dear Accounts Team,",
        "",
        f"Please find our bill {doc.invoice_no} against your order {doc.po_number} "
        f"for goods supplied on {doc.business_date}.",
        "",
    ]
    for n, line in enumerate(doc.lines, 1):
        out.append(
            f"  {n}) {line.qty} units of {line.sku} ({line.description}) "
            f"at Rs {_amount(line.unit_price_paise)} per unit"
        )
    out += [
        "",
        f"Kindly remit Rs {_amount(_total(doc))}.",
        f"Regards, {doc.supplier_name} ({doc.supplier_id})",
    ]
    return "\n".join(out) + "\n"


RENDERERS = {"table": render_table, "csv": render_csv, "letter": render_letter}


def render(doc: Document, layout: str) -> str:
    return RENDERERS[layout](doc)


def render_unreadable(doc: Document, rng: random.Random) -> str:
    """What a failed scan looks like: a header fragment and noise, no line items."""
    noise = "".join(rng.choice("#%&@?~^*;:!|/\\") for _ in range(240))
    return f"[scan {doc.invoice_no}.pdf - OCR confidence 3%]\n{noise}\n"
