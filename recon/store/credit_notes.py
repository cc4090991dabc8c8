"""Credit notes suppliers send: kept apart from invoices (never reconciled as one) and listed in
the night's summary against the documents they cite (our debit notes' claim numbers, or their
own invoices)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import asyncpg

_INSERT = """
INSERT INTO credit_notes (supplier_id, credit_note_no, business_date, warehouse, issued_on, format,
                          file_name, file_sha256, cites, amount_paise, currency, lines, document)
SELECT s, n, d, w, i, f, fn, h, string_to_array(c, chr(31)), a, cur, l, t
FROM unnest($1::text[], $2::text[], $3::date[], $4::text[], $5::date[], $6::text[], $7::text[],
            $8::text[], $9::text[], $10::bigint[], $11::text[], $12::int[], $13::text[])
     AS x(s, n, d, w, i, f, fn, h, c, a, cur, l, t)
ORDER BY s COLLATE "C", n COLLATE "C"  -- key order: see recon/store/ledger.py `_INSERT`
ON CONFLICT (supplier_id, credit_note_no) DO NOTHING
RETURNING credit_note_no
"""


async def insert_credit_notes(conn: asyncpg.Connection, rows: Sequence[tuple]) -> int:
    """(supplier_id, number, business_date, warehouse, issued_on, format, file_name, sha256,
    cites (list), amount_paise, currency, lines, document); one already stored stays. Returns
    how many were new."""
    if not rows:
        return 0
    flat = [(*r[:8], "\x1f".join(r[8]), *r[9:]) for r in rows]
    inserted = await conn.fetch(_INSERT, *[list(c) for c in zip(*flat, strict=True)])
    return len(inserted)


async def credit_notes_of_night(conn: asyncpg.Connection | asyncpg.Pool, business_date: date,
                                warehouse: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT c.supplier_id, s.name, c.credit_note_no, c.issued_on, c.cites, c.amount_paise,"
        " c.currency, c.format FROM credit_notes c JOIN suppliers s USING (supplier_id)"
        " WHERE c.business_date = $1 AND c.warehouse = $2 ORDER BY c.supplier_id, c.credit_note_no",
        business_date, warehouse)


async def debit_note_keys(conn: asyncpg.Connection | asyncpg.Pool,
                          supplier_ids: Sequence[str]) -> list[asyncpg.Record]:
    """Keys of every debit note we queued to these suppliers (a credit note may answer any)."""
    return await conn.fetch(
        "SELECT supplier_id, key FROM outbox WHERE kind = 'debit-note'"
        " AND supplier_id = ANY($1::text[])", list(supplier_ids))
