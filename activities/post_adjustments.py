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
from recon.fencing import scope_for
from recon.ledger import LedgerEntry, live_adjustment_total, post_entries, verify_adjustments
from recon.models import PostInput, PostResult
from recon.store.statistics import refresh_statistics

STEP = "post_adjustments"

# $4 the generation new entries go under, $5 the supplier in scope (NULL: all). A mismatch that
# already has a live entry in any generation is left alone: a reset that undid nothing posts
# nothing, and a redo after an undo posts exactly what was reversed, under fresh keys.
_NEXT = """
SELECT m.seq, recon_key(m.reference, $4) AS reference, m.invoice_no, m.supplier_id, m.line_no,
       m.kind, m.amount_paise, m.detail,
       EXISTS (SELECT 1 FROM generate_series(1, $4) AS gen
               JOIN live_ledger_entries l ON l.reference = recon_key(m.reference, gen)) AS live
FROM open_mismatches m
WHERE m.workflow_id = $1 AND m.seq > $2 AND ($5::text IS NULL OR m.supplier_id = $5)
ORDER BY m.seq LIMIT $3
"""


@activity.defn(name="post_adjustments")
@business_step
async def post_adjustments(job: PostInput) -> PostResult:
    pool = resources.pool()
    fence = await fences.take(scope_for(job.workflow_id, "ledger"))
    async with pool.acquire() as conn:
        generation = await conn.fetchval("SELECT recon_generation($1)", job.workflow_id)

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

        walk = await walk_in_batches(
            conn, STEP, _NEXT, job.workflow_id, job.batch_size, last_progress(), write,
            (generation, job.supplier_id),
        )
        await refresh_statistics(conn, "ledger_entries")  # as in update_stock: plan on what it holds
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
