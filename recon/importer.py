"""`recon import DIR`: load invoice documents from files so people can run on their own data.

Each file is one invoice; its name (without extension) is the invoice number. The sender is read
from the document when the layout names it, or given with --supplier. Nothing is written unless
every file can be attributed: a half-imported night would be reconciled half.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

import asyncpg

from recon.extraction.offline import parse_document
from recon.extraction.schema import MAX_DOCUMENT_CHARS, UnreadableInvoice


class ImportProblem(ValueError):
    """The files cannot be imported as they are; one line says why."""


@dataclass(frozen=True)
class ImportResult:
    imported: int
    skipped_existing: int


def _sender(text: str, fallback: str | None) -> str | None:
    try:
        return parse_document(text).supplier_id
    except UnreadableInvoice:
        return fallback


async def import_directory(
    pool: asyncpg.Pool, folder: Path, business_date: str, warehouse: str,
    supplier: str | None = None,
) -> ImportResult:
    try:
        day = date.fromisoformat(business_date)
    except ValueError:
        raise ImportProblem(f"--date must be YYYY-MM-DD, got {business_date!r}") from None
    if not folder.is_dir():
        raise ImportProblem(f"{folder} is not a folder")
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise ImportProblem(f"{folder} holds no invoice files")
    rows, unattributed = [], []
    for path in files:
        if path.stat().st_size > MAX_DOCUMENT_CHARS * 4:
            raise ImportProblem(f"{path.name} is larger than an invoice document can be")
        # Postgres text cannot hold NUL; keep the document (it will be parked as unreadable if
        # nobody can read it) rather than refuse the whole folder.
        text = path.read_text(errors="replace").replace("\x00", "\ufffd")
        sender = _sender(text, supplier)
        if sender is None:
            unattributed.append(path.name)
        rows.append((path.stem, sender, day, warehouse, text))
    if unattributed:
        raise ImportProblem(
            f"{len(unattributed)} file(s) do not name their supplier (e.g. {unattributed[0]}): "
            "pass --supplier ID"
        )
    async with pool.acquire() as conn, conn.transaction():
        known = {r["supplier_id"] for r in await conn.fetch("SELECT supplier_id FROM suppliers")}
        unknown = sorted({r[1] for r in rows} - known)
        if unknown:
            raise ImportProblem(f"unknown supplier(s): {', '.join(unknown[:5])}")
        inserted = await conn.fetch(
            """
            INSERT INTO invoices (invoice_no, supplier_id, business_date, warehouse, document, source)
            SELECT n, s, d, w, t, 'import'
            FROM unnest($1::text[], $2::text[], $3::date[], $4::text[], $5::text[]) AS x(n, s, d, w, t)
            ON CONFLICT (invoice_no) DO NOTHING RETURNING invoice_no
            """,
            *[list(c) for c in zip(*rows, strict=True)],
        )
    return ImportResult(imported=len(inserted), skipped_existing=len(rows) - len(inserted))
