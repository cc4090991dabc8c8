"""Taking documents in, the same way for a folder and a mailbox: attribute every document, refuse
the whole batch on any refusal, then write it in one transaction (nothing half-imported).

A file that is no invoice to reconcile is refused alone, by name, and the others are taken: XML
with a DTD or entities ("DOCTYPE not allowed in inv.xml"), a document of another kind (a UBL
DespatchAdvice or Order, a CII of another type code), a document marked as a test. Each is what
it is whatever else the folder holds, so the other files need not wait for it.
Refusals (one line each, nothing written): a document whose supplier cannot be told (without
`--supplier`); a contradiction inside a document (two suppliers' ids, or its ids and its PO naming
different suppliers); a currency other than the supplier's; a credit note that breaks the checks;
two documents carrying one (supplier, number), named together; a supplier not in `suppliers`.
Against what is stored (an invoice is its supplier's number: two suppliers' INV-7001 are two
invoices): the same (supplier, number) with the same document is "already there"; with another
document it is refused naming both, unless `replace` and neither night has started; and nothing
is added to a night whose working set step 1 has copied (`NightStarted`).
An invoice that breaks the checks is not refused: it is imported under its number and step 2
parks it with the reason (the import says so), as an unreadable text invoice is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta

import asyncpg

from recon.documents.attribution import (
    Attributed,
    Directory,
    Incoming,
    attribute,
    credit_note_problem,
    credit_row,
    currency_problem,
    number_problem,
)
from recon.documents.formats.checks import check
from recon.documents.formats.reading import CREDIT_NOTE
from recon.domain.errors import ImportProblem, NightStarted, UnreadableInvoice
from recon.domain.keys import workflow_id_for
from recon.store import credit_notes, document_files, invoice_intake, seeding, supplier_ids


@dataclass
class Batch:
    invoices: list[Attributed] = field(default_factory=list)
    credit_notes: list[Attributed] = field(default_factory=list)
    to_park: list[str] = field(default_factory=list)  # "origin: reason", step 2 will park them
    refused: list[str] = field(default_factory=list)  # files refused alone, each naming itself


@dataclass(frozen=True)
class IntakeResult:
    imported: int
    skipped_existing: int
    credit_notes: int = 0
    credit_notes_existing: int = 0
    formats: dict[str, int] = field(default_factory=dict)
    to_park: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)  # "number of supplier (where it was)"
    refused: list[str] = field(default_factory=list)  # files refused alone: hostile, not invoices


async def directory(conn: asyncpg.Connection, items: list[Incoming]) -> Directory:
    pos = sorted({i.file.reading.po_number for i in items
                  if i.file.reading is not None and i.file.reading.po_number})
    return Directory.of(await supplier_ids.supplier_directory(conn),
                        await supplier_ids.po_suppliers(conn, pos))


def _refuse_duplicates(docs: list[Attributed], what: str, collapse_identical: bool) -> list[Attributed]:
    by_key: dict[tuple[str, str], list[Attributed]] = {}
    for doc in docs:
        by_key.setdefault((doc.supplier_id, doc.number), []).append(doc)
    kept = []
    for (supplier, number), group in by_key.items():
        if len(group) > 1 and not (collapse_identical
                                   and len({d.incoming.file.sha256 for d in group}) == 1):
            names = " and ".join(d.incoming.origin for d in group)
            raise ImportProblem(f"{names} all carry {what} number {number} of {supplier}: "
                                "keep one of them")
        kept.append(group[0])
    return kept


def plan(items: list[Incoming], where: Directory, fallback: str | None,
         collapse_identical: bool = False) -> Batch:
    """Attribute and check every document, or raise ImportProblem for the first refusal. A file
    that is no invoice to reconcile (hostile XML, another kind of document, a test) is refused
    alone: set aside in `refused`, the others go on."""
    attributed, unattributed, refused = [], [], []
    for item in items:
        if item.file.refusal:
            refused.append(item.file.refusal)
            continue
        doc = attribute(item, where, fallback)
        if doc is None:
            unattributed.append(item.origin)
        else:
            attributed.append(doc)
    if unattributed:
        also = f" (and refused: {'; '.join(refused)})" if refused else ""
        raise ImportProblem(
            f"{len(unattributed)} file(s) do not name their supplier (e.g. {unattributed[0]}): "
            "no GSTIN, VAT id, endpoint or PO of a known supplier; pass --supplier ID; nothing "
            f"imported{also}")
    batch = Batch(refused=refused)
    for doc in attributed:
        problem = number_problem(doc) or currency_problem(doc, where)
        if problem is None and doc.kind == CREDIT_NOTE:
            problem = credit_note_problem(doc)
        if problem:
            raise ImportProblem(problem)
        (batch.credit_notes if doc.kind == CREDIT_NOTE else batch.invoices).append(doc)
    batch.invoices = _refuse_duplicates(batch.invoices, "invoice", collapse_identical)
    batch.credit_notes = _refuse_duplicates(batch.credit_notes, "credit note", collapse_identical)
    for doc in batch.invoices:
        reason = doc.incoming.file.problem
        if reason is None and doc.reading is not None and doc.incoming.file.structured:
            try:
                check(doc.reading)
            except UnreadableInvoice as exc:
                reason = exc.reason
        if reason:
            batch.to_park.append(f"{doc.incoming.origin}: {reason}")
    return batch


def _issued(doc: Attributed) -> date | None:
    text = doc.reading.issued_on if doc.reading is not None else None
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def _where(row: asyncpg.Record) -> str:
    """Where a stored invoice came from, as the person who imported it would say it."""
    source = f"file {row['file_name']}" if row["file_name"] else f"{row['source']}ed"
    return f"night of {row['business_date']} at {row['warehouse']}, {source}"


@dataclass(frozen=True)
class _Sorted:
    new: list[Attributed]
    same: list[Attributed]
    other: list[tuple[Attributed, asyncpg.Record]]  # same (supplier, number), another document


async def _sort(conn: asyncpg.Connection, docs: list[Attributed]) -> _Sorted:
    """An invoice is its supplier's number: the same pair with the same document (byte for byte)
    is already there; with another document it is a conflict a person settles."""
    stored = await invoice_intake.stored_invoices(conn, [(d.supplier_id, d.number) for d in docs])
    new, same, other = [], [], []
    for doc in docs:
        row = stored.get((doc.supplier_id, doc.number))
        if row is None:
            new.append(doc)
        elif row["document"] == doc.incoming.file.document:
            same.append(doc)
        else:
            other.append((doc, row))
    return _Sorted(new, same, other)


async def _check_replacements(conn: asyncpg.Connection, other: list[tuple[Attributed, asyncpg.Record]],
                              replace: bool) -> None:
    """Another document under a stored (supplier, number): refused if the stored one's night has
    started (whatever `replace` says: it is reconciled, or being), else refused naming both
    unless `replace`."""
    if not other:
        return

    def night_of(row: asyncpg.Record) -> str:
        return workflow_id_for(str(row["business_date"]), row["warehouse"])

    for night in sorted({night_of(r) for _d, r in other}):  # sorted: locks in one order
        if await invoice_intake.night_started(conn, night):
            doc, row = next((d, r) for d, r in other if night_of(r) == night)
            raise NightStarted(
                night, f"invoice {doc.number} of {doc.supplier_id} is already there with another "
                f"document ({_where(row)}) than {doc.incoming.origin}, and cannot be replaced",
                "nothing imported; a correction of a bill its night has read is the supplier's "
                "credit note and a new invoice under another number")
    doc, row = other[0]
    more = f" (and {len(other) - 1} more)" if len(other) > 1 else ""
    if not replace:
        raise ImportProblem(
            f"invoice {doc.number} of {doc.supplier_id} is already there with another document "
            f"({_where(row)}) than {doc.incoming.origin}{more}: nothing imported; if "
            f"{doc.incoming.origin} is the right one, import again with --replace (its night has "
            "not started)")


async def store(conn: asyncpg.Connection, batch: Batch, day: date, warehouse: str,
                replace: bool = False) -> IntakeResult:
    """Write the batch on the caller's connection, inside the caller's transaction. One import
    at a time; the night's lock is held until the caller commits, so step 1 of the night either
    copies everything written here or ran before and this is refused (nothing written)."""
    known = await seeding.known_suppliers(conn)
    unknown = sorted({d.supplier_id for d in batch.invoices + batch.credit_notes} - known)
    if unknown:
        raise ImportProblem(f"unknown supplier(s): {', '.join(unknown[:5])}")
    await invoice_intake.lock_for_import(conn)
    night = workflow_id_for(day.isoformat(), warehouse)
    started = await invoice_intake.night_started(conn, night)
    found = await _sort(conn, batch.invoices)
    await _check_replacements(conn, found.other, replace)
    if started and (found.new or found.other):
        _refuse_started(night, day, found.new or [d for d, _r in found.other])
    inserted = await seeding.insert_imported_invoices(
        conn, [(d.number, d.supplier_id, day, warehouse, d.incoming.file.document)
               for d in found.new])
    if len(inserted) != len(found.new):  # imports queue on one lock; a seed does not
        raise ImportProblem("some of these invoices were stored by another writer meanwhile: "
                            "nothing imported; import again")
    replaced = [d for d, _r in found.other]
    await invoice_intake.replace_invoices(
        conn, day, warehouse, [(d.supplier_id, d.number, d.incoming.file.document) for d in replaced])
    await document_files.record_files(conn, [
        (d.number, d.supplier_id, d.incoming.file.format, d.incoming.origin,
         d.incoming.file.sha256, _issued(d)) for d in found.new + replaced])
    credits = await credit_notes.insert_credit_notes(
        conn, [credit_row(d, day, warehouse) for d in batch.credit_notes])
    if started and credits:
        _refuse_started(night, day, batch.credit_notes)  # raised inside the transaction: undone
    formats = Counter(d.incoming.file.format for d in batch.invoices + batch.credit_notes)
    return IntakeResult(
        imported=len(inserted), skipped_existing=len(found.same),
        credit_notes=credits, credit_notes_existing=len(batch.credit_notes) - credits,
        formats=dict(sorted(formats.items())), to_park=batch.to_park,
        replaced=[f"{d.number} of {d.supplier_id} ({_where(r)})" for d, r in found.other],
        refused=batch.refused)


def _refuse_started(night: str, day: date, docs: list[Attributed]) -> None:
    later = (day + timedelta(days=1)).isoformat()
    first = docs[0]
    raise NightStarted(
        night, f"{first.number} of {first.supplier_id} ({first.incoming.origin})"
        + (f" and {len(docs) - 1} more" if len(docs) > 1 else "") + " not imported",
        f"its working set is fixed, so nothing added now would be reconciled and nothing is "
        f"imported; put them on a later night: --date {later} (or any later business date)")
