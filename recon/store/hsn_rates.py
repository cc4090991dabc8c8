"""GST rates by HSN code and date, as `recon load hsn-rates` writes them: copied into a temporary
table, then written with one statement. A row for a (code, date) already stored with another rate
replaces it (a correction of the master data: nights already weighed keep their mismatches).
The caller owns the transaction and the lock."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

_STAGE = """
CREATE TEMP TABLE load_hsn_rates (
    line integer NOT NULL, hsn text NOT NULL, tax_rate numeric NOT NULL, valid_from date NOT NULL
) ON COMMIT DROP
"""
COLUMNS = ["line", "hsn", "tax_rate", "valid_from"]

_WRITE = """
WITH before AS (
    SELECT l.hsn, l.valid_from, r.hsn IS NULL AS is_new
    FROM load_hsn_rates l
    LEFT JOIN hsn_tax_rates r ON r.hsn = l.hsn AND r.valid_from = l.valid_from
), written AS (
    INSERT INTO hsn_tax_rates AS r (hsn, valid_from, tax_rate)
    SELECT hsn, valid_from, tax_rate FROM load_hsn_rates ORDER BY hsn, valid_from
    ON CONFLICT (hsn, valid_from) DO UPDATE SET tax_rate = EXCLUDED.tax_rate
        WHERE r.tax_rate <> EXCLUDED.tax_rate
    RETURNING r.hsn, r.valid_from
)
SELECT count(*) FILTER (WHERE b.is_new) AS new, count(*) FILTER (WHERE NOT b.is_new) AS changed
FROM written w JOIN before b ON b.hsn = w.hsn AND b.valid_from = w.valid_from
"""


async def stage(conn: asyncpg.Connection, rows: Sequence[tuple]) -> None:
    """Rows in `COLUMNS` order, by one COPY into this transaction's table."""
    await conn.execute(_STAGE)
    await conn.copy_records_to_table("load_hsn_rates", records=rows, columns=COLUMNS)


async def write(conn: asyncpg.Connection) -> tuple[int, int]:
    """(new, changed) rows."""
    row = await conn.fetchrow(_WRITE)
    return int(row["new"]), int(row["changed"])
