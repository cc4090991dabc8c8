"""Step 7: one ledger entry per flagged mismatch, under the key the mismatch was given.

The ledger's primary key makes a redo harmless; the fence makes a stale attempt harmless; the
heartbeat makes a redo short; the closing check makes "done" mean "the ledger holds it".
"""

from __future__ import annotations

import asyncpg
from temporalio import activity

from activities import fences, resources
from activities.batches import walk_in_batches
from activities.step import business_step, last_progress
from recon.keys import fence_scope
from recon.models import PostInput, PostResult
from recon.store.generations import current_generation
from recon.store.ledger import (
    LedgerEntry,
    live_adjustment_total,
    next_to_post,
    post_entries,
    verify_adjustments,
)

STEP = "post_adjustments"

@activity.defn(name="post_adjustments")
@business_step
async def post_adjustments(job: PostInput) -> PostResult:
    pool = resources.pool()
    fence = await fences.take(fence_scope(job.workflow_id, "ledger"))
    async with pool.acquire() as conn:
        generation = await current_generation(conn, job.workflow_id)

        async def write(rows: list[asyncpg.Record]) -> int:
            return await post_entries(conn, [
                LedgerEntry(
                    reference=r["reference"], workflow_id=job.workflow_id,
                    invoice_no=r["invoice_no"], supplier_id=r["supplier_id"],
                    line_no=r["line_no"], kind=r["kind"], amount_paise=r["amount_paise"],
                    memo=r["detail"],
                )
                for r in rows if not r["live"]
            ], fence)

        async def fetch(after_seq: int) -> list[asyncpg.Record]:
            return await next_to_post(conn, job.workflow_id, after_seq, job.batch_size,
                                      generation, job.supplier_id)

        walk = await walk_in_batches(STEP, last_progress(), fetch, write)
        expected = await verify_adjustments(conn, job.workflow_id, job.supplier_id)
        total = await live_adjustment_total(conn, job.workflow_id, job.supplier_id)
    activity.logger.info(
        "%s: %s new ledger entries, %s walked again (resumed after entry %s)",
        job.workflow_id, walk.inserted, walk.already_there, walk.started_after,
    )
    return PostResult(
        expected=expected, inserted=walk.inserted, already_there=walk.already_there,
        walked_again=walk.already_there, started_at=walk.started_after, amount_paise=int(total),
    )
