"""Taking documents in, the same way for a folder and a mailbox: attribute every document, refuse
the whole batch on any refusal, then write it in one transaction (nothing half-imported).

Refusals (one line each, nothing written): a document whose supplier cannot be told (without
`--supplier`); a contradiction inside a document (two suppliers' ids, or its ids and its PO naming
different suppliers); a currency other than the supplier's; a credit note that breaks the checks;
two documents carrying one (supplier, number), named together; a supplier not in `suppliers`.
An invoice that breaks the checks is not refused: it is imported under its number and step 2
parks it with the reason (the import says so), as an unreadable text invoice is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date

import asyncpg

from recon.documents.attribution import (
    Attributed,
    Directory,
    Incoming,
    attribute,
    credit_note_problem,
    credit_row,
    currency_problem,
)
from recon.documents.formats.checks import check
from recon.documents.formats.reading import CREDIT_NOTE
from recon.domain.errors import ImportProblem, UnreadableInvoice
from recon.store import credit_notes, document_files, seeding, supplier_ids


@dataclass
class Batch:
    invoices: list[Attributed] = field(default_factory=list)
    credit_notes: list[Attributed] = field(default_factory=list)
    to_park: list[str] = field(default_factory=list)  # "origin: reason", step 2 will park them


@dataclass(frozen=True)
class IntakeResult:
    imported: int
    skipped_existing: int
    credit_notes: int = 0
    credit_notes_existing: int = 0
    formats: dict[str, int] = field(default_factory=dict)
    to_park: list[str] = field(default_factory=list)


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
    """Attribute and check every document, or raise ImportProblem for the first refusal."""
    attributed, unattributed = [], []
    for item in items:
        doc = attribute(item, where, fallback)
        if doc is None:
            unattributed.append(item.origin)
        else:
            attributed.append(doc)
    if unattributed:
        raise ImportProblem(
            f"{len(unattributed)} file(s) do not name their supplier (e.g. {unattributed[0]}): "
            "no GSTIN, VAT id, endpoint or PO of a known supplier; pass --supplier ID")
    batch = Batch()
    for doc in attributed:
        problem = currency_problem(doc, where)
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


async def store(conn: asyncpg.Connection, batch: Batch, day: date, warehouse: str) -> IntakeResult:
    """Write the batch on the caller's connection, inside the caller's transaction."""
    known = await seeding.known_suppliers(conn)
    unknown = sorted({d.supplier_id for d in batch.invoices + batch.credit_notes} - known)
    if unknown:
        raise ImportProblem(f"unknown supplier(s): {', '.join(unknown[:5])}")
    inserted: list[str] = []
    if batch.invoices:
        rows = [(d.number, d.supplier_id, day, warehouse, d.incoming.file.document)
                for d in batch.invoices]
        inserted = await seeding.insert_imported_invoices(conn, rows)
        new = set(inserted)
        await document_files.record_files(conn, [
            (d.number, d.supplier_id, d.incoming.file.format, d.incoming.origin,
             d.incoming.file.sha256, _issued(d)) for d in batch.invoices if d.number in new])
    credits = await credit_notes.insert_credit_notes(
        conn, [credit_row(d, day, warehouse) for d in batch.credit_notes])
    formats = Counter(d.incoming.file.format for d in batch.invoices + batch.credit_notes)
    return IntakeResult(
        imported=len(inserted), skipped_existing=len(batch.invoices) - len(inserted),
        credit_notes=credits, credit_notes_existing=len(batch.credit_notes) - credits,
        formats=dict(sorted(formats.items())), to_park=batch.to_park)
