"""Where each imported document came from: its file's name, format and SHA-256, and the date the
document states, recorded beside the invoice row the import wrote."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import asyncpg

_RECORD = """
UPDATE invoices i SET format = x.f, file_name = x.n, file_sha256 = x.h, issued_on = x.d
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::date[])
     AS x(no, s, f, n, h, d)
WHERE i.invoice_no = x.no AND i.supplier_id = x.s AND i.source = 'import'
"""


async def record_files(conn: asyncpg.Connection,
                       rows: Sequence[tuple[str, str, str, str, str, date | None]]) -> None:
    """(invoice_no, supplier_id, format, file_name, sha256, issued_on) of invoices just
    inserted (an invoice is its supplier's number)."""
    if rows:
        await conn.execute(_RECORD, *[list(c) for c in zip(*rows, strict=True)])
