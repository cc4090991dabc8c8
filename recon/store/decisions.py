"""Decisions in Postgres: the refusals of decisions a run did not take, and the money a decision
puts at stake (docs/design.md §3, "Signed decisions"). The approvers who sign them are in
`approvers.py`.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg


async def record_refusal(
    conn: asyncpg.Connection | asyncpg.Pool, *, check_id: str, workflow_id: str,
    handover_no: int, via: str, tried_by: str, signer: str | None, decision: str,
    park: list[str], stake_paise: int | None, reason: str, received_at: datetime,
) -> None:
    """Keep a refused decision on record; a retried check finds its row and adds none."""
    await conn.execute(
        "INSERT INTO refused_decisions (check_id, workflow_id, handover_no, via, tried_by,"
        " signer, decision, park, stake_paise, reason, received_at)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        " ON CONFLICT (check_id) DO NOTHING",
        check_id, workflow_id, handover_no, via, tried_by, signer, decision, park,
        stake_paise, reason, received_at,
    )


async def refusals_of(conn: asyncpg.Connection | asyncpg.Pool,
                      workflow_id: str) -> list[asyncpg.Record]:
    """A run's refused decisions in order (`recon handover RUN`)."""
    return await conn.fetch(
        "SELECT handover_no, via, tried_by, signer, decision, reason, received_at"
        " FROM refused_decisions WHERE workflow_id = $1 ORDER BY received_at, check_id",
        workflow_id)


# The debit notes a night would send, per supplier as step 9 computes them (the sum of the
# supplier's open mismatches, when positive), leaving out the invoices the decision parks; plus
# the size of what the decision parks (absolute amounts of those invoices' open mismatches).
_STAKE_OF_GOING_ON = """
WITH open_rows AS (
    SELECT m.supplier_id, m.invoice_no, m.amount_paise, coalesce(s.currency, 'INR') AS currency
    FROM open_mismatches m LEFT JOIN suppliers s USING (supplier_id)
    WHERE m.workflow_id = $1 AND ($3::text IS NULL OR m.supplier_id = $3)
), owed AS (
    SELECT currency, sum(amount_paise) AS total FROM open_rows
    WHERE invoice_no <> ALL($2::text[]) GROUP BY supplier_id, currency
), parts AS (
    SELECT currency, total FROM owed WHERE total > 0
    UNION ALL
    SELECT currency, abs(amount_paise) FROM open_rows WHERE invoice_no = ANY($2::text[])
)
SELECT currency, sum(total) AS total FROM parts GROUP BY currency
"""

# An undo reverses every live entry of the night (or of the redo's supplier).
_STAKE_OF_UNDO = """
SELECT currency, sum(abs(amount_paise)) AS total FROM live_ledger_entries
WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)
GROUP BY currency
"""

# bigint holds ±9.2e18 paise; a sum of many bigints is numeric in Postgres and may exceed it.
_BIGINT_MAX = 2**63 - 1


async def money_at_stake(conn: asyncpg.Connection | asyncpg.Pool, night: str,
                         supplier_id: str | None, decision: str,
                         park: list[str]) -> dict[str, int]:
    """What a decision moves, per currency in its minor unit (never one sum of two): for resume
    and retry, the debit notes it lets go out plus what it parks; for undo, the live ledger it
    reverses (docs/design.md §3)."""
    if decision == "undo":
        rows = await conn.fetch(_STAKE_OF_UNDO, night, supplier_id)
    else:
        rows = await conn.fetch(_STAKE_OF_GOING_ON, night, list(park), supplier_id)
    return {r["currency"]: min(int(r["total"]), _BIGINT_MAX) for r in rows if r["total"]}
