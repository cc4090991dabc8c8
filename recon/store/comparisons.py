"""What step 5 compared, read back: where step 8's walk ends and which lines the summary names as
over-deliveries. Reads only; the comparisons are written by recon/store/weighing.py."""

from __future__ import annotations

import asyncpg


async def over_deliveries(conn: asyncpg.Connection | asyncpg.Pool,
                          workflow_id: str) -> list[asyncpg.Record]:
    """The night's lines billed beyond what the order allows although the goods came: an
    over-delivery billed as delivered. Accepted up to the order, the rest claimed; the summary
    names each."""
    return await conn.fetch(
        "SELECT invoice_no, line_no, supplier_id, po_number, sku, invoiced_qty, received_qty,"
        " received_to_date, prior_accepted, beyond_order FROM comparisons"
        " WHERE workflow_id = $1 AND beyond_order > 0"
        " AND received_to_date >= prior_accepted + invoiced_qty"
        " ORDER BY invoice_no, line_no", workflow_id)


async def last_comparison_seq(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> int:
    """Where step 8's walk over the run's comparisons ends."""
    return await conn.fetchval(
        "SELECT coalesce(max(seq), 0) FROM comparisons WHERE workflow_id = $1", workflow_id
    )
