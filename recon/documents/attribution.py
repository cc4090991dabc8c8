"""Who sent a document and under which number: decided from the document, never its file name.

Rules, in order (docs/design.md "Documents in every format"):
1. The sender is the supplier whose GSTIN, VAT id or Peppol endpoint the document states (mapped
   through `suppliers`), or whose code it states (our text layouts). If ids of two suppliers are
   stated, or the ids name one supplier and the cited PO belongs to another, it is refused.
2. Otherwise the supplier of the purchase order it cites.
3. Otherwise, for mail, the supplier whose address sent the message; then `--supplier`.
4. Otherwise it is refused by name.
The number is the document's own. Only a document no reader can read before the night (free
text for a model, a scan, a PDF nobody can open) has none: it keeps the file name's stem as a
provisional number (a mail attachment adds the message's short digest), and step 2 reads or parks
it. The currency stated must be the supplier's (`suppliers.currency`, INR unless set).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import PurePath

from recon.documents.formats.checks import check, payable_paise
from recon.documents.formats.detect import FileReading
from recon.documents.formats.reading import CREDIT_NOTE, Reading
from recon.domain.errors import ImportProblem, UnreadableInvoice
from recon.domain.printable import printable


@dataclass(frozen=True)
class Directory:
    """The suppliers table as the importer needs it."""

    by_gstin: dict[str, str]
    by_vat: dict[str, str]
    by_endpoint: dict[str, str]
    currency: dict[str, str]
    by_email: dict[str, str]
    po_supplier: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: list, po_supplier: dict[str, str]) -> Directory:
        emails: dict[str, list[str]] = {}
        for r in rows:
            emails.setdefault((r["email"] or "").lower(), []).append(r["supplier_id"])
        return cls(
            by_gstin={r["gstin"].upper(): r["supplier_id"] for r in rows if r["gstin"]},
            by_vat={_vat(r["vat_id"]): r["supplier_id"] for r in rows if r["vat_id"]},
            by_endpoint={r["peppol_endpoint"].lower(): r["supplier_id"]
                         for r in rows if r["peppol_endpoint"]},
            currency={r["supplier_id"]: r["currency"] for r in rows},
            by_email={e: ids[0] for e, ids in emails.items() if e and len(ids) == 1},
            po_supplier=po_supplier,
        )


def _vat(value: str) -> str:
    return value.replace(" ", "").upper()


@dataclass
class Incoming:
    """One document as it arrived: a file in a folder, or an attachment (or body) of a message."""

    file: FileReading
    origin: str  # how a person finds it: the file name, or "message <id>: <attachment>"
    stem: str  # the provisional number, if the document states none
    sender_hint: str | None = None  # mail: the supplier whose address sent it


@dataclass
class Attributed:
    incoming: Incoming
    number: str
    supplier_id: str
    kind: str
    provisional: bool  # the number is the file name's, not the document's

    @property
    def reading(self) -> Reading | None:
        return self.incoming.file.reading


def _by_ids(reading: Reading, where: Directory, origin: str) -> str | None:
    ids = reading.sender
    found = {s for s in (where.by_gstin.get((ids.gstin or "").upper()),
                         where.by_vat.get(_vat(ids.vat_id or "")),
                         where.by_endpoint.get((ids.endpoint or "").lower())) if s}
    if ids.supplier_id:
        found.add(ids.supplier_id)
    if len(found) > 1:
        raise ImportProblem(f"{origin} names more than one supplier ({', '.join(sorted(found))} "
                            f"by {ids.named()})")
    return found.pop() if found else None


def attribute(item: Incoming, where: Directory, fallback: str | None) -> Attributed | None:
    """The document's number and sender, or None when the sender cannot be told. Raises
    ImportProblem for a contradiction the document itself carries."""
    reading = item.file.reading
    if reading is None:
        supplier = item.sender_hint or fallback
        if supplier is None:
            return None
        return Attributed(item, item.stem, supplier, "invoice", provisional=True)
    by_ids = _by_ids(reading, where, item.origin)
    by_po = where.po_supplier.get(reading.po_number or "")
    if by_ids and by_po and by_ids != by_po:
        raise ImportProblem(f"{item.origin} is from {by_ids} ({reading.sender.named()}) but cites "
                            f"{reading.po_number}, an order of {by_po}")
    supplier = by_ids or by_po or item.sender_hint or fallback
    if supplier is None:
        return None
    if not reading.number:
        return Attributed(item, item.stem, supplier, reading.kind, provisional=True)
    return Attributed(item, reading.number, supplier, reading.kind, provisional=False)


def number_problem(doc: Attributed) -> str | None:
    """An invoice or credit note number is text a supplier reads back in a debit note: a control
    or bidirectional character (ESC, U+202E, a line break) in it is refused, as in a supplier's
    name (recon/documents/master_csv.py), and the whole batch with it."""
    if doc.number.isprintable():
        return None
    return (f"{doc.incoming.origin}: the {doc.kind.replace('_', ' ')} number "
            f"'{printable(doc.number)}' holds a control or bidirectional character "
            f"(ESC, U+202E, a line break, ...): not imported")


def currency_problem(doc: Attributed, where: Directory) -> str | None:
    reading = doc.reading
    if reading is None or reading.currency is None:
        return None
    billed_in = where.currency.get(doc.supplier_id, "INR")
    if reading.currency.upper() != billed_in:
        return (f"{doc.incoming.origin} is in {reading.currency}, and {doc.supplier_id} bills in "
                f"{billed_in}: amounts are never converted (set the supplier's currency with "
                f"`recon supplier {doc.supplier_id} --currency {reading.currency.upper()}` if "
                "its orders are priced in it)")
    return None


def credit_note_problem(doc: Attributed) -> str | None:
    """A credit note is not reconciled later, so it is checked now: a broken one is refused."""
    assert doc.reading is not None
    try:
        check(doc.reading)
    except UnreadableInvoice as exc:
        return f"credit note {doc.number} ({doc.incoming.origin}): {exc.reason}"
    return None


def credit_row(doc: Attributed, business_date: date, warehouse: str) -> tuple:
    reading = doc.reading
    assert reading is not None and reading.kind == CREDIT_NOTE
    issued = None
    if reading.issued_on:
        try:
            issued = date.fromisoformat(reading.issued_on)
        except ValueError:
            issued = None
    return (doc.supplier_id, doc.number, business_date, warehouse, issued, reading.format,
            doc.incoming.origin, doc.incoming.file.sha256, list(reading.cites),
            payable_paise(reading), reading.currency or "INR", len(reading.lines),
            doc.incoming.file.document)


def stem_of(name: str) -> str:
    return PurePath(name).stem or name
