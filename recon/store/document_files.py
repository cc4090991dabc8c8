"""Where each imported document came from: its file's name, format and SHA-256, and the date the
document states, recorded beside the invoice row the import wrote."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import asyncpg

_RECORD = """
UPDATE invoices i SET format = x.f, file_name = x.n, file_sha256 = x.h, issued_on = x.d
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::date[]) AS x(no, f, n, h, d)
WHERE i.invoice_no = x.no AND i.source = 'import'
"""


async def record_files(conn: asyncpg.Connection,
                       rows: Sequence[tuple[str, str, str, str, date | None]]) -> None:
    """(invoice_no, format, file_name, sha256, issued_on) of invoices just inserted."""
    if rows:
        await conn.execute(_RECORD, *[list(c) for c in zip(*rows, strict=True)])


async def stored_digests(conn: asyncpg.Connection, invoice_nos: Sequence[str]) -> dict[str, str]:
    """The file digest of invoices already stored under these numbers (None for seeded ones)."""
    rows = await conn.fetch(
        "SELECT invoice_no, coalesce(file_sha256, '') AS h FROM invoices"
        " WHERE invoice_no = ANY($1::text[])", list(invoice_nos))
    return {r["invoice_no"]: r["h"] for r in rows}
