"""The figures the gate before debit notes weighs (docs/design.md §3): parked share and the
adjustments against the night's invoiced value. Ledger and stock are verified by their own
stores (ledger.verify_adjustments, stock.verify_movements)."""

from __future__ import annotations

import asyncpg


async def gate_figures(pool: asyncpg.Pool, workflow_id: str) -> asyncpg.Record:
    """invoices, parked (whole invoices), total (open adjustments, paise), invoiced (paise)."""
    row = await pool.fetchrow(
        "SELECT (SELECT count(*) FROM run_invoices WHERE workflow_id = $1) AS invoices,"
        " (SELECT count(*) FROM parked_items WHERE workflow_id = $1 AND line_no IS NULL) AS parked,"
        " (SELECT coalesce(sum(amount_paise), 0) FROM open_mismatches WHERE workflow_id = $1) AS total,"
        " (SELECT coalesce(sum(qty::bigint * unit_price_paise), 0) FROM invoice_lines"
        "   WHERE workflow_id = $1) AS invoiced",
        workflow_id,
    )
    return row
