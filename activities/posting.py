"""Steps 7 and 8, the business writes: ledger adjustments and stock movements.

Step 7: one ledger entry per flagged mismatch, under the key the mismatch was given. The
ledger's primary key makes a redo harmless; the fence makes a stale attempt harmless; the
heartbeat makes a redo short; the closing check makes "done" mean "the ledger holds it".

Step 8: book each reconciled line's accepted quantity into stock, once per key (the received
units step 5 credited it with: never more than was received and not yet accepted for its PO
line). Same guarantees (keyed rows, fenced writes, heartbeat progress, a closing check), but set-based: each
transaction is one statement over a seq range of the run's comparisons
(recon.store.stock.move_reconciled_range), so no movement passes through Python, and two
connections book ranges side by side (activities/lanes.py).
"""

from __future__ import annotations

import asyncpg
from temporalio import activity

from activities.batches import walk_in_batches
from activities.lanes import book_in_lanes
from activities.resources import Room
from activities.statistics import refresh_statistics
from activities.step import business_step, last_progress
from recon.domain.keys import fence_scope
from recon.domain.models import PostInput, PostResult
from recon.ledger.pusher import post_run
from recon.store import acceptances
from recon.store.comparisons import last_comparison_seq
from recon.store.generations import current_generation
from recon.store.ledger import (
    LedgerEntry,
    ever_undone,
    live_adjustment_total,
    next_to_post,
    parts_of,
    post_entries,
    verify_adjustments,
)
from recon.store.mandates import Posting
from recon.store.statistics import BULK_ROWS
from recon.store.stock import RangeMoved, move_reconciled_range, verify_movements

LEDGER_STEP = "post_adjustments"
STOCK_STEP = "update_stock"


class PostingActivities(Room):
    """Steps 7 and 8."""

    @activity.defn(name="post_adjustments")
    @business_step
    async def post_adjustments(self, job: PostInput) -> PostResult:
        pool = self.pool
        fence = await self.take_fence(fence_scope(job.workflow_id, "ledger"))
        async with pool.acquire() as conn:
            generation = await current_generation(conn, job.workflow_id)
            # Whoever called: the night's own generation, open (docs/design.md §3, "Mandates");
            # asked now, and again in every batch's transaction.
            fence = fence.with_mandate(Posting(job.workflow_id, job.supplier_id, generation))
            await fence.check_mandate(conn)

            async def write(rows: list[asyncpg.Record]) -> int:
                return await post_entries(conn, [
                    LedgerEntry(
                        reference=r["reference"], workflow_id=job.workflow_id,
                        invoice_no=r["invoice_no"], supplier_id=r["supplier_id"],
                        line_no=r["line_no"], kind=r["kind"], amount_paise=r["amount_paise"],
                        memo=r["detail"], parts=parts_of(r),
                    )
                    for r in rows if not r["live"]
                ], fence)

            async def fetch(after_seq: int) -> list[asyncpg.Record]:
                return await next_to_post(conn, job.workflow_id, after_seq, job.batch_size,
                                          generation, job.supplier_id)

            walk = await walk_in_batches(LEDGER_STEP, last_progress(), fetch, write)
            if walk.started_after + walk.inserted + walk.already_there >= BULK_ROWS:
                # the check joins what was posted
                await refresh_statistics(conn, job.workflow_id, "ledger_entries")
            expected = await verify_adjustments(conn, job.workflow_id, job.supplier_id)
            total = await live_adjustment_total(conn, job.workflow_id, job.supplier_id)
            outside = self.outside
            if outside is not None:
                # The same entries, owed to the company's ledger: checked there by key, posted
                # one at a time under the fence, then checked there (recon/ledger/pusher.py).
                sent = await post_run(conn, outside, fence, job.workflow_id, job.supplier_id,
                                      LEDGER_STEP)
                activity.logger.info("%s: %s entries sent to the %s ledger", job.workflow_id,
                                     sent, outside.name)
        activity.logger.info(
            "%s: %s new ledger entries, %s walked again (resumed after entry %s)",
            job.workflow_id, walk.inserted, walk.already_there, walk.started_after,
        )
        return PostResult(
            expected=expected, inserted=walk.inserted, already_there=walk.already_there,
            walked_again=walk.already_there, started_at=walk.started_after, amount_paise=int(total),
        )

    @activity.defn(name="update_stock")
    @business_step
    async def update_stock(self, job: PostInput) -> PostResult:
        pool = self.pool
        fence = await self.take_fence(fence_scope(job.workflow_id, "stock"))
        started_after = last_progress()
        async with pool.acquire() as conn:
            generation = await current_generation(conn, job.workflow_id)
            fence = fence.with_mandate(Posting(job.workflow_id, job.supplier_id, generation))
            await fence.check_mandate(conn)  # and in every range's transaction
            undone = await ever_undone(conn, job.workflow_id)
            last_seq = await last_comparison_seq(conn, job.workflow_id)

        async def book(conn: asyncpg.Connection, after: int, upto: int) -> RangeMoved:
            return await move_reconciled_range(conn, job.workflow_id, job.warehouse, after, upto,
                                               fence, generation, job.supplier_id, undone)

        booked = await book_in_lanes(pool, STOCK_STEP, started_after, last_seq, job.batch_size,
                                     book)
        inserted, walked = booked.inserted, booked.wanted
        async with pool.acquire() as conn:
            # The closing check joins every line to its movement: planned on a table the
            # statistics still think empty, that join is a nested loop over both.
            if last_seq >= BULK_ROWS:
                await refresh_statistics(conn, job.workflow_id, "stock_movements")
            expected = await verify_movements(conn, job.workflow_id, job.supplier_id)
            # A redo after an undo takes its quantities again (a first run's are live already).
            if undone:
                await acceptances.revive(conn, job.workflow_id, job.supplier_id)
        return PostResult(
            expected=expected, inserted=inserted, already_there=walked - inserted,
            walked_again=walked - inserted, started_at=started_after,
        )
