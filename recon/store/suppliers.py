"""Suppliers as `recon load suppliers` writes them: a file's rows are staged in a temporary
table, checked against the stored suppliers in one statement, then upserted in one statement.

The caller owns the transaction (all or nothing per file) and holds the master data lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

_STAGE = """
CREATE TEMP TABLE load_suppliers (
    line integer NOT NULL, supplier_id text NOT NULL, name text NOT NULL, email text NOT NULL,
    gstin text, currency text
) ON COMMIT DROP
"""
COLUMNS = ["line", "supplier_id", "name", "email", "gstin", "currency"]

# The first row (in file order) that the stored suppliers contradict: a GSTIN that belongs to
# another supplier, or a supplier whose stored GSTIN differs from the file's.
_FIRST_CONFLICT = """
SELECT * FROM (
    SELECT l.line, 'gstin_taken' AS problem, l.supplier_id, l.gstin, s.supplier_id AS holder,
           NULL::text AS stored
    FROM load_suppliers l JOIN suppliers s ON s.gstin = l.gstin AND s.supplier_id <> l.supplier_id
    UNION ALL
    SELECT l.line, 'gstin_changed', l.supplier_id, l.gstin, NULL, s.gstin
    FROM load_suppliers l JOIN suppliers s ON s.supplier_id = l.supplier_id
    WHERE l.gstin IS NOT NULL AND s.gstin IS NOT NULL AND s.gstin <> l.gstin
) found
ORDER BY line LIMIT 1
"""

# A stored GSTIN or currency stays when the file gives none (a new supplier bills in ₹); a row
# equal to the stored one is not written.
_UPSERT = """
WITH before AS (
    SELECT l.supplier_id, s.supplier_id IS NULL AS is_new
    FROM load_suppliers l LEFT JOIN suppliers s ON s.supplier_id = l.supplier_id
), written AS (
    INSERT INTO suppliers AS s (supplier_id, name, email, gstin, currency)
    SELECT supplier_id, name, email, gstin, coalesce(currency, 'INR') FROM load_suppliers
    ORDER BY supplier_id
    ON CONFLICT (supplier_id) DO UPDATE
        SET name = EXCLUDED.name, email = EXCLUDED.email, gstin = coalesce(EXCLUDED.gstin, s.gstin),
            currency = (SELECT coalesce(l.currency, s.currency) FROM load_suppliers l
                        WHERE l.supplier_id = EXCLUDED.supplier_id)
        WHERE (s.name, s.email, s.gstin, s.currency)
              IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.email, coalesce(EXCLUDED.gstin, s.gstin),
                                (SELECT coalesce(l.currency, s.currency) FROM load_suppliers l
                                 WHERE l.supplier_id = EXCLUDED.supplier_id))
    RETURNING s.supplier_id
)
SELECT count(*) FILTER (WHERE b.is_new) AS new, count(*) FILTER (WHERE NOT b.is_new) AS changed
FROM written w JOIN before b ON b.supplier_id = w.supplier_id
"""


@dataclass(frozen=True)
class Written:
    new: int
    changed: int


async def stage(conn: asyncpg.Connection, rows: Sequence[tuple]) -> None:
    """Rows as (line, supplier_id, name, email, gstin, currency), by COPY into this transaction's table."""
    await conn.execute(_STAGE)
    await conn.copy_records_to_table("load_suppliers", records=rows, columns=COLUMNS)


async def first_conflict(conn: asyncpg.Connection) -> asyncpg.Record | None:
    return await conn.fetchrow(_FIRST_CONFLICT)


async def write(conn: asyncpg.Connection) -> Written:
    row = await conn.fetchrow(_UPSERT)
    return Written(new=row["new"], changed=row["changed"])

