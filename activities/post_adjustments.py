"""Step 7: one ledger entry per flagged mismatch, under the key the mismatch was given.

The ledger's primary key makes a redo harmless; the fence makes a stale attempt harmless; the
heartbeat makes a redo short; the closing check makes "done" mean "the ledger holds it".
"""

from __future__ import annotations

import asyncpg
from temporalio import activity

from activities import resources
from activities.batches import walk_in_batches
from activities.step import business_step, last_progress
from recon.fencing import scope_for, take_fence
from recon.ledger import LedgerEntry, post_entries, verify_adjustments
from recon.models import PostInput, PostResult

STEP = "post_adjustments"

_NEXT = """
SELECT seq, reference, invoice_no, supplier_id, line_no, kind, amount_paise, detail
FROM mismatches WHERE workflow_id = $1 AND seq > $2 ORDER BY seq LIMIT $3
"""


@activity.defn(name="post_adjustments")
@business_step
async def post_adjustments(job: PostInput) -> PostResult:
    pool = resources.pool()
    fence = await take_fence(pool, scope_for(job.workflow_id, "ledger"))
    async with pool.acquire() as conn:

        async def write(rows: list[asyncpg.Record]) -> int:
            return await post_entries(conn, [
                LedgerEntry(
                    reference=r["reference"], workflow_id=job.workflow_id,
                    invoice_no=r["invoice_no"], supplier_id=r["supplier_id"],
                    line_no=r["line_no"], kind=r["kind"], amount_paise=r["amount_paise"],
                    memo=r["detail"],
                )
                for r in rows
            ], fence)

        walk = await walk_in_batches(
            conn, STEP, _NEXT, job.workflow_id, job.batch_size, last_progress(), write
        )
        expected = await verify_adjustments(conn, job.workflow_id)
        total = await conn.fetchval(
            "SELECT coalesce(sum(amount_paise), 0) FROM mismatches WHERE workflow_id = $1",
            job.workflow_id,
        )
    activity.logger.info(
        "%s: %s new ledger entries, %s walked again (resumed after entry %s)",
        job.workflow_id, walk.inserted, walk.already_there, walk.started_after,
    )
    return PostResult(
        expected=expected, inserted=walk.inserted, already_there=walk.already_there,
        walked_again=walk.already_there, started_at=walk.started_after, amount_paise=int(total),
    )
