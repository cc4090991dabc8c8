"""Lines held awaiting receipt (docs/design.md §12): billed beyond what was received to date but
within the order, inside the grace window. A night's summary, `recon status` and `recon inspect`
list what the night left held; a later night carries them into its own match (recon/store/
matching.py) until one claims them."""

from __future__ import annotations

import asyncpg

_STILL_HELD = """
SELECT h.invoice_no, h.line_no, h.supplier_id, h.po_number, h.sku, h.qty, h.qty_open,
       h.unit_price_paise, h.billed_night, h.issued_on, h.held_until, h.evidence,
       (h.qty::numeric * h.unit_price_paise) AS billed_paise
FROM held_lines h
WHERE h.workflow_id = $1
ORDER BY h.invoice_no, h.line_no
"""


async def held_by(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> list[dict]:
    """The lines this night held awaiting receipt (a later night may have claimed them since)."""
    return [dict(r) for r in await conn.fetch(_STILL_HELD, workflow_id)]


async def held_count(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> tuple[int, int]:
    """(lines held by this night, their billed value in paise)."""
    row = await conn.fetchrow(
        "SELECT count(*) AS n, coalesce(sum(qty::numeric * unit_price_paise), 0) AS paise"
        " FROM held_lines WHERE workflow_id = $1", workflow_id)
    return int(row["n"]), int(row["paise"])


# The held lines a night carries into its own match (recon/store/matching.py `_CARRY_HELD`): held
# by earlier nights of the warehouse ($2) for bills dated before the night ($3), claimed by no live
# acceptance, one row per line from the night the bill came in (the first that held it: a night's
# id sorts by its date within a warehouse). $1 is the carrying night's workflow id.
OPEN_HOLDS = """
    SELECT DISTINCT ON (h.invoice_no, h.line_no) h.*
    FROM held_lines h
    WHERE h.warehouse = $2 AND h.billed_night < $3 AND h.workflow_id <> $1
      AND NOT EXISTS (SELECT 1 FROM acceptances a
                      WHERE a.invoice_no = h.invoice_no AND a.line_no = h.line_no AND a.live)
    ORDER BY h.invoice_no, h.line_no, h.workflow_id
"""


async def open_holds_before(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str,
                            warehouse: str, business_date) -> int:
    """How many lines the night would carry (`OPEN_HOLDS`): a night with no new invoices still
    has work when this is not zero."""
    return int(await conn.fetchval(f"SELECT count(*) FROM ({OPEN_HOLDS}) held",
                                   workflow_id, warehouse, business_date))


async def carried_into(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> tuple[int, int]:
    """(lines this night carried from earlier nights' holds, how many of them it claimed): a
    carried line the night did not hold again was claimed by it, clean or short."""
    row = await conn.fetchrow(
        "SELECT count(*) AS carried, count(*) FILTER (WHERE NOT EXISTS ("
        " SELECT 1 FROM held_lines h WHERE h.workflow_id = m.workflow_id"
        " AND h.invoice_no = m.invoice_no AND h.line_no = m.line_no)) AS claimed"
        " FROM line_matches m WHERE m.workflow_id = $1 AND m.carried_from IS NOT NULL",
        workflow_id)
    return int(row["carried"]), int(row["claimed"])
