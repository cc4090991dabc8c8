"""Parked items: permanent for one item. The run finishes the others and the summary lists these."""

from __future__ import annotations

import asyncpg

from recon.domain.keys import parked_item_key


async def park(
    conn: asyncpg.Connection,
    workflow_id: str,
    step: str,
    invoice_no: str,
    reason: str,
    evidence: str = "",
    line_no: int | None = None,
) -> None:
    item_key = parked_item_key(invoice_no, line_no)
    await conn.execute(
        """
        INSERT INTO parked_items (workflow_id, item_key, step, invoice_no, line_no, reason, evidence)
        VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (workflow_id, item_key) DO NOTHING
        """,
        workflow_id, item_key, step, invoice_no, line_no, reason[:500], evidence[:2000],
    )
