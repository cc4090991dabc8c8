"""Handovers: the note a run writes when it cannot decide, and the decision a person records.

One row per (workflow id, handover number); the note is written once (a retried attempt finds
it), and a decision is recorded once (only while none is on record).
"""

from __future__ import annotations

import json
from datetime import datetime

import asyncpg


async def what_was_posted(conn: asyncpg.Connection, workflow_id: str) -> dict:
    """Live counts (reversed entries do not count), per supplier, for the note and the memo."""
    ledger = await conn.fetchrow(
        "SELECT count(*) AS n, coalesce(sum(amount_paise), 0) AS total"
        " FROM live_ledger_entries WHERE workflow_id = $1",
        workflow_id,
    )
    per_supplier = await conn.fetch(
        """
        SELECT m.supplier_id, count(*) AS flagged, coalesce(sum(m.amount_paise), 0) AS flagged_total,
               count(l.reference) AS posted, coalesce(sum(l.amount_paise), 0) AS posted_total,
               coalesce((SELECT s.currency FROM suppliers s WHERE s.supplier_id = m.supplier_id),
                        'INR') AS currency
        FROM open_mismatches m
        LEFT JOIN LATERAL (
            SELECT l.reference, l.amount_paise FROM live_ledger_entries l
            WHERE l.workflow_id = m.workflow_id AND l.invoice_no = m.invoice_no
              AND l.line_no = m.line_no AND l.kind = m.kind LIMIT 1
        ) l ON true
        WHERE m.workflow_id = $1
        GROUP BY m.supplier_id ORDER BY m.supplier_id
        """,
        workflow_id,
    )
    flagged = await conn.fetchrow(
        "SELECT count(*) AS n, coalesce(sum(amount_paise), 0) AS total"
        " FROM open_mismatches WHERE workflow_id = $1",
        workflow_id,
    )
    stock = await conn.fetchval(
        "SELECT count(*) FROM live_stock_movements WHERE workflow_id = $1", workflow_id
    )
    outbox = await conn.fetch(
        "SELECT kind, count(*) AS n FROM outbox WHERE workflow_id = $1 GROUP BY kind", workflow_id
    )
    parked = await conn.fetchval(
        "SELECT count(*) FROM parked_items WHERE workflow_id = $1", workflow_id
    )
    # the totals per currency, each in its minor unit (two currencies are never added)
    posted_by = {r["currency"]: int(r["total"]) for r in await conn.fetch(
        "SELECT currency, sum(amount_paise) AS total FROM live_ledger_entries"
        " WHERE workflow_id = $1 GROUP BY currency", workflow_id)}
    flagged_by: dict[str, int] = {}
    for r in per_supplier:
        flagged_by[r["currency"]] = flagged_by.get(r["currency"], 0) + int(r["flagged_total"])
    return {
        "ledger_by_currency": posted_by,
        "flagged_by_currency": flagged_by,
        "ledger_entries": ledger["n"],
        "ledger_total_paise": int(ledger["total"]),
        "per_supplier": [
            {"supplier_id": r["supplier_id"], "posted": r["posted"],
             "posted_paise": int(r["posted_total"]), "flagged": r["flagged"],
             "flagged_paise": int(r["flagged_total"]), "currency": r["currency"]}
            for r in per_supplier
        ],
        "flagged": flagged["n"],
        "flagged_total_paise": int(flagged["total"]),
        "stock_movements": stock,
        "outbox": {r["kind"]: r["n"] for r in outbox},
        "parked": parked,
    }


async def stored_note(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str,
                      handover_no: int) -> str | None:
    """The note of a handover already on record, if any."""
    return await conn.fetchval(
        "SELECT note FROM handovers WHERE workflow_id = $1 AND handover_no = $2",
        workflow_id, handover_no,
    )


async def insert_handover(
    conn: asyncpg.Connection, workflow_id: str, handover_no: int, step: str, error_type: str,
    error_message: str, attempts: int, posted: dict, next_action: str, note: str,
) -> None:
    """Put a handover on record, with what was posted when it was written."""
    await conn.execute(
        "INSERT INTO handovers (workflow_id, handover_no, step, error_type, error_message,"
        " attempts, posted, next_action, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        workflow_id, handover_no, step, error_type, error_message,
        attempts, json.dumps(posted), next_action, note,
    )


async def record_decision(
    pool: asyncpg.Pool, workflow_id: str, handover_no: int, decision: str, by: str, note: str,
    decided_at: datetime, park: list[str], confirmed_by: str | None = None,
) -> None:
    """The first decision on a handover stands: a retried attempt writes nothing new.
    `confirmed_by`: the second approver of a four-eyes decision."""
    await pool.execute(
        "UPDATE handovers SET decision = $3, decided_by = $4, decision_note = $5,"
        " decided_at = $6::timestamptz, parked_invoices = $7, confirmed_by = $8"
        " WHERE workflow_id = $1 AND handover_no = $2 AND decision IS NULL",
        workflow_id, handover_no, decision, by, note,
        decided_at, park, confirmed_by,
    )


async def waiting(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Every handover that waits for a decision, oldest first (`recon handovers`)."""
    return await pool.fetch(
        "SELECT workflow_id, handover_no, step, error_type, created_at FROM handovers"
        " WHERE decision IS NULL ORDER BY created_at"
    )


async def of_run(pool: asyncpg.Pool, workflow_id: str) -> list[asyncpg.Record]:
    """A run's handovers in order, with their decisions (`recon handover RUN`)."""
    return await pool.fetch(
        "SELECT * FROM handovers WHERE workflow_id = $1 ORDER BY handover_no", workflow_id
    )
