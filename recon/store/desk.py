"""What the finance desk reads (recon/desk/, docs/desk.md): nights in figures, a night's invoices,
parked items and ledger entries. Read-only; the desk decides nothing here.
"""

from __future__ import annotations

import asyncpg

Db = asyncpg.Connection | asyncpg.Pool

# One row per night that took invoices, newest first: its figures and the handover it waits on.
# The newest $1 night ids are found by skipping through the index night by night (one probe per
# night, not a read of every invoice of every night: a year of nights costs what $1 nights cost),
# and each is counted by the covering index on (workflow_id, supplier_id), migration 099.
_NIGHTS = """
WITH RECURSIVE ids AS (
    (SELECT workflow_id FROM run_invoices WHERE $2::text IS NULL OR workflow_id = $2
     ORDER BY workflow_id DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT r.workflow_id FROM run_invoices r WHERE r.workflow_id < ids.workflow_id
            ORDER BY r.workflow_id DESC LIMIT 1)
    FROM ids WHERE ids.workflow_id IS NOT NULL AND $2::text IS NULL
), nights AS (
    SELECT i.workflow_id, c.invoices, c.suppliers
    FROM (SELECT workflow_id FROM ids WHERE workflow_id IS NOT NULL LIMIT $1) i,
    LATERAL (SELECT count(*) AS invoices, count(DISTINCT supplier_id) AS suppliers
             FROM run_invoices r WHERE r.workflow_id = i.workflow_id) c
)
SELECT n.workflow_id, n.invoices, n.suppliers, recon_generation(n.workflow_id) AS generation,
       (SELECT count(*) FROM parked_items p WHERE p.workflow_id = n.workflow_id) AS parked,
       (SELECT coalesce(jsonb_object_agg(currency, total), '{}'::jsonb) FROM (
            SELECT currency, sum(amount_paise) AS total FROM live_ledger_entries l
            WHERE l.workflow_id = n.workflow_id GROUP BY currency) t) AS adjustments,
       (SELECT count(*) FROM live_ledger_entries l WHERE l.workflow_id = n.workflow_id) AS claims,
       h.handover_no AS pending_handover, h.step AS pending_step
FROM nights n
LEFT JOIN LATERAL (SELECT handover_no, step FROM handovers h
                   WHERE h.workflow_id = n.workflow_id AND h.decision IS NULL
                   ORDER BY handover_no DESC LIMIT 1) h ON true
ORDER BY n.workflow_id DESC
LIMIT $1
"""


async def nights(conn: Db, limit: int = 200) -> list[asyncpg.Record]:
    return await conn.fetch(_NIGHTS, limit, None)


async def night(conn: Db, workflow_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow(_NIGHTS, 1, workflow_id)


async def invoices_of(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    """The night's invoices with who sent them (a supplier's name is theirs: shown escaped)."""
    return await conn.fetch(
        "SELECT r.invoice_no, r.supplier_id, coalesce(s.name, '') AS supplier_name"
        " FROM run_invoices r LEFT JOIN suppliers s USING (supplier_id)"
        " WHERE r.workflow_id = $1 ORDER BY r.seq", workflow_id)


async def parked_of(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT invoice_no, line_no, step, reason, parked_at FROM parked_items"
        " WHERE workflow_id = $1 ORDER BY parked_at, item_key", workflow_id)


async def ledger_of(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT invoice_no, line_no, kind, amount_paise, currency FROM live_ledger_entries"
        " WHERE workflow_id = $1 ORDER BY invoice_no, line_no, kind", workflow_id)
