"""What any reader makes of one document, before anything is checked or stored: a `Reading`.

Every format (GST e-invoice JSON, UBL, CII, the CII inside a Factur-X PDF, the text layouts) is
read into this one shape, so the checks (`checks.py`), the importer's attribution and step 2 treat
all of them alike. Amounts are kept as `Decimal` exactly as the document states them; they become
integer paise only in `checks.py`, by one stated rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from recon.domain.errors import UnreadableInvoice

INVOICE, CREDIT_NOTE, DEBIT_NOTE = "invoice", "credit-note", "debit-note"
# A hostile number ("1e999999") must be refused, not computed with: no invoice states an amount of
# more than 10^15 or with more than 10 decimals.
MAX_DIGITS, MAX_DECIMALS = 15, 10


@dataclass(frozen=True)
class PartyIds:
    """How a document names its sender. Any one of them, mapped through `suppliers`, tells who
    sent it; `supplier_id` is our own code, which only our text layouts carry."""

    gstin: str | None = None
    vat_id: str | None = None
    endpoint: str | None = None  # "scheme:id", e.g. "0088:9482348239847239874"
    supplier_id: str | None = None
    name: str | None = None

    def named(self) -> str:
        shown = [f"GSTIN {self.gstin}" if self.gstin else "",
                 f"VAT id {self.vat_id}" if self.vat_id else "",
                 f"endpoint {self.endpoint}" if self.endpoint else "",
                 f"supplier {self.supplier_id}" if self.supplier_id else ""]
        return ", ".join(s for s in shown if s) or "no supplier id"


@dataclass(frozen=True)
class ReadingLine:
    line_no: int
    sku: str
    description: str
    quantity: Decimal
    net_amount: Decimal  # the line's net (taxable) amount as stated: qty x price -/+ line allowances
    unit_price: Decimal | None = None  # the stated price per unit (per BaseQuantity applied)
    tax_rate: Decimal | None = None
    tax_amount: Decimal | None = None  # GST: IGST + CGST + SGST of the line, when stated
    gross_amount: Decimal | None = None  # GST: TotItemVal
    unit: str | None = None
    # Tax as the document states it, part by part (docs/books.md "Tax"): the HSN (or other
    # classification) code, the tax category (UBL/CII: S, Z, E, AE...), and the GST parts of the
    # line where the document states them (an e-invoice does; UBL and CII state a rate only).
    hsn: str | None = None
    tax_category: str | None = None
    cgst: Decimal | None = None
    sgst: Decimal | None = None
    igst: Decimal | None = None
    cess: Decimal | None = None  # ad valorem: a rate on the assessable value
    cess_specific: Decimal | None = None  # per unit (GST `CesNonAdvlAmt`): not by value


@dataclass(frozen=True)
class Total:
    """A stated total and what the format says it must equal, with the format's tolerance."""

    name: str
    stated: Decimal
    computed: Decimal
    tolerance: Decimal = Decimal("0")


@dataclass
class Reading:
    format: str  # "gst-einvoice", "ubl", "cii", "text-table", ...
    kind: str  # INVOICE, CREDIT_NOTE or DEBIT_NOTE
    number: str | None
    issued_on: str | None  # ISO date
    sender: PartyIds
    po_number: str | None
    currency: str | None
    lines: list[ReadingLine] = field(default_factory=list)
    totals: list[Total] = field(default_factory=list)
    cites: list[str] = field(default_factory=list)  # documents a credit note answers
    payable: Decimal | None = None  # what the document asks (or, a credit note, gives) in total
    notes: list[str] = field(default_factory=list)  # what the reader chose to ignore, said once
    # The buyer's GSTIN and the place of supply (a GST state code) where the document states
    # them: with the seller's GSTIN they decide CGST+SGST (one state) or IGST (two states).
    buyer_gstin: str | None = None
    place_of_supply: str | None = None


def decimal(text: str | None, what: str) -> Decimal:
    """A number as the document writes it, or UnreadableInvoice naming the field."""
    if text is None or not str(text).strip():
        raise UnreadableInvoice(f"{what} is missing")
    raw = str(text).strip()
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise UnreadableInvoice(f"{what} is not a number: {raw[:40]!r}") from None
    if not value.is_finite():
        raise UnreadableInvoice(f"{what} is not a number: {raw[:40]!r}")
    if value and (value.adjusted() > MAX_DIGITS or value.as_tuple().exponent < -MAX_DECIMALS):
        raise UnreadableInvoice(f"{what} is not a plausible amount: {raw[:40]!r}")
    return value


def optional_decimal(text: str | None, what: str) -> Decimal | None:
    return None if text is None or not str(text).strip() else decimal(text, what)
