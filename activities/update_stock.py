"""Step 8: book each reconciled line's received quantity into stock, once per key.

Same shape as step 7: keyed rows, fenced batches, heartbeat progress, a closing check.
"""

from __future__ import annotations

import asyncpg
from temporalio import activity

from activities import resources
from activities.batches import walk_in_batches
from activities.step import business_step, last_progress
from recon.fencing import scope_for, take_fence
from recon.models import PostInput, PostResult
from recon.stock import StockMovement, move_stock, movement_key, verify_movements

STEP = "update_stock"

_NEXT = """
SELECT seq, invoice_no, line_no, supplier_id, sku, received_qty
FROM comparisons WHERE workflow_id = $1 AND seq > $2 ORDER BY seq LIMIT $3
"""


@activity.defn(name="update_stock")
@business_step
async def update_stock(job: PostInput) -> PostResult:
    pool = resources.pool()
    fence = await take_fence(pool, scope_for(job.workflow_id, "stock"))
    async with pool.acquire() as conn:

        async def write(rows: list[asyncpg.Record]) -> int:
            return await move_stock(conn, [
                StockMovement(
                    key=movement_key(job.workflow_id, r["invoice_no"], r["line_no"]),
                    workflow_id=job.workflow_id, warehouse=job.warehouse, sku=r["sku"],
                    qty=r["received_qty"], supplier_id=r["supplier_id"],
                    invoice_no=r["invoice_no"], line_no=r["line_no"],
                    note=f"received against {r['invoice_no']} line {r['line_no']}, reconciled",
                )
                for r in rows
            ], fence)

        walk = await walk_in_batches(
            conn, STEP, _NEXT, job.workflow_id, job.batch_size, last_progress(), write
        )
        expected = await verify_movements(conn, job.workflow_id)
    return PostResult(
        expected=expected, inserted=walk.inserted, already_there=walk.already_there,
        walked_again=walk.already_there, started_at=walk.started_after,
    )
