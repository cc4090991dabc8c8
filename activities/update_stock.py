"""Step 8: book each reconciled line's received quantity into stock, once per key.

Same shape as step 7: keyed rows, fenced batches, heartbeat progress, a closing check.
"""

from __future__ import annotations

import asyncpg
from temporalio import activity

from activities import fences, resources
from activities.batches import walk_in_batches
from activities.step import business_step, last_progress
from recon.fencing import scope_for
from recon.keys import generation_key
from recon.models import PostInput, PostResult
from recon.stock import StockMovement, move_stock, movement_key, verify_movements

STEP = "update_stock"

# $4 generation, $5 supplier in scope (NULL: all); a line with a live movement in any generation
# is left alone (see post_adjustments).
_NEXT = """
SELECT c.seq, c.invoice_no, c.line_no, c.supplier_id, c.sku, c.received_qty,
       EXISTS (SELECT 1 FROM generate_series(1, $4) AS gen
               JOIN live_stock_movements m
                 ON m.key = recon_key($1 || ':stock:' || c.invoice_no || ':' || c.line_no, gen)
              ) AS live
FROM open_comparisons c
WHERE c.workflow_id = $1 AND c.seq > $2 AND ($5::text IS NULL OR c.supplier_id = $5)
ORDER BY c.seq LIMIT $3
"""


@activity.defn(name="update_stock")
@business_step
async def update_stock(job: PostInput) -> PostResult:
    pool = resources.pool()
    fence = await fences.take(scope_for(job.workflow_id, "stock"))
    async with pool.acquire() as conn:
        generation = await conn.fetchval("SELECT recon_generation($1)", job.workflow_id)

        async def write(rows: list[asyncpg.Record]) -> int:
            return await move_stock(conn, [
                StockMovement(
                    key=generation_key(
                        movement_key(job.workflow_id, r["invoice_no"], r["line_no"]), generation),
                    workflow_id=job.workflow_id, warehouse=job.warehouse, sku=r["sku"],
                    qty=r["received_qty"], supplier_id=r["supplier_id"],
                    invoice_no=r["invoice_no"], line_no=r["line_no"],
                    note=f"received against {r['invoice_no']} line {r['line_no']}, reconciled",
                )
                for r in rows if not r["live"]
            ], fence)

        walk = await walk_in_batches(
            conn, STEP, _NEXT, job.workflow_id, job.batch_size, last_progress(), write,
            (generation, job.supplier_id),
        )
        expected = await verify_movements(conn, job.workflow_id, job.supplier_id)
    return PostResult(
        expected=expected, inserted=walk.inserted, already_there=walk.already_there,
        walked_again=walk.already_there, started_at=walk.started_after,
    )
