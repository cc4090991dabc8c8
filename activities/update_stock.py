"""Step 8: book each reconciled line's received quantity into stock, once per key.

Same guarantees as step 7 (keyed rows, fenced writes, heartbeat progress, a closing check), but
set-based: each transaction is one statement over a seq range of the run's comparisons
(recon.store.stock.move_reconciled_range), so no movement passes through Python.
"""

from __future__ import annotations

from temporalio import activity

from activities import fences, resources
from activities.step import business_step, last_progress, report_progress
from recon import failpoints
from recon.keys import fence_scope
from recon.models import PostInput, PostResult
from recon.store.generations import current_generation
from recon.store.ledger import ever_undone
from recon.store.matching import last_comparison_seq
from recon.store.stock import move_reconciled_range, verify_movements

STEP = "update_stock"


@activity.defn(name="update_stock")
@business_step
async def update_stock(job: PostInput) -> PostResult:
    pool = resources.pool()
    fence = await fences.take(fence_scope(job.workflow_id, "stock"))
    started_after = position = last_progress()
    inserted = walked = 0
    async with pool.acquire() as conn:
        generation = await current_generation(conn, job.workflow_id)
        undone = await ever_undone(conn, job.workflow_id)
        last_seq = await last_comparison_seq(conn, job.workflow_id)
        while position < last_seq:
            upto = min(position + job.batch_size, last_seq)
            failpoints.hit_range(STEP, position, upto)
            moved = await move_reconciled_range(
                conn, job.workflow_id, job.warehouse, position, upto, fence, generation,
                job.supplier_id, undone,
            )
            inserted += moved.inserted
            walked += moved.wanted
            position = upto
            report_progress(position)
            await failpoints.after_batch(STEP)
        expected = await verify_movements(conn, job.workflow_id, job.supplier_id)
    return PostResult(
        expected=expected, inserted=inserted, already_there=walked - inserted,
        walked_again=walked - inserted, started_at=started_after,
    )
