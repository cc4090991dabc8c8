"""Steps 1 and 3-6: read the night's invoices into the run's working set, match lines to
purchase orders, snapshot received stock, compare, flag mismatches. Nothing here writes to the
business; every statement is in recon/store (invoices, matching) and fills the run's rows once.
"""

from __future__ import annotations

from datetime import date

from temporalio import activity

from activities.resources import Room
from activities.statistics import refresh_statistics
from activities.step import business_step
from recon.domain.keys import night_of
from recon.domain.match_policy import MatchPolicy
from recon.domain.models import Count, PostInput, StepInput
from recon.store import comparing, invoices, matching
from recon.store.generations import current_generation


class ReadingActivities(Room):
    """Steps 1 and 3-6."""

    @activity.defn(name="fetch_invoices")
    @business_step
    async def fetch_invoices(self, step: StepInput) -> Count:
        """Step 1: the working set is fixed once, so a retry or a reset reads nothing again."""
        have = await invoices.copy_night(self.pool, step.workflow_id,
                                         date.fromisoformat(step.business_date), step.warehouse)
        # Every step after this one reads the night by seq range or joins it whole: each filling
        # step refreshes the planner's statistics of what it filled (recon/store/statistics.py).
        await refresh_statistics(self.pool, step.workflow_id, "run_invoices")
        activity.logger.info("fetched %s invoices for %s", have, step.workflow_id)
        return Count(count=have)

    @activity.defn(name="match_orders")
    @business_step
    async def match_orders(self, step: StepInput) -> Count:
        """Step 3. Lines that match no purchase order are parked, the others go on."""
        # The extraction filled these in many small transactions: plan on what they hold now.
        await refresh_statistics(self.pool, step.workflow_id, "invoice_lines", "extractions",
                                 "parked_items")
        matched, parked = await matching.match_orders(
            self.pool, step.workflow_id, date.fromisoformat(step.business_date), step.warehouse)
        await refresh_statistics(self.pool, step.workflow_id, "line_matches", "parked_items")
        return Count(count=matched, parked=parked)

    @activity.defn(name="read_stock")
    @business_step
    async def read_stock(self, step: StepInput) -> Count:
        """Step 4. Receipts keep arriving during the night; the run compares against the snapshot it
        took first, so a resume never re-reads a different picture."""
        lines = await matching.read_stock(self.pool, step.workflow_id, step.warehouse,
                                          date.fromisoformat(step.business_date))
        await refresh_statistics(self.pool, step.workflow_id, "stock_snapshots")
        return Count(count=lines)

    @activity.defn(name="compare_quantities")
    @business_step
    async def compare_quantities(self, step: StepInput) -> Count:
        """Step 5. Each matched line weighed against its PO line's open quantity, cumulatively
        across nights: accepted, held awaiting receipt, or claimed short (recon/store/comparing.py)."""
        compared = await comparing.compare_quantities(
            self.pool, step.workflow_id, date.fromisoformat(step.business_date), step.warehouse,
            MatchPolicy.of(self.settings))
        await refresh_statistics(self.pool, step.workflow_id, "comparisons", "acceptances",
                                 "invoice_fingerprints", "held_lines")
        return Count(count=compared)

    @activity.defn(name="flag_mismatches")
    @business_step
    async def flag_mismatches(self, step: StepInput) -> Count:
        """Step 6. Billed for units no received unit covers: a `qty` adjustment of them at the
        invoice price. Billed off the PO price beyond the tolerance: a `price` adjustment on the
        units accepted. Each gets its ledger key here."""
        flagged = await comparing.flag_mismatches(
            self.pool, step.workflow_id, date.fromisoformat(step.business_date), step.warehouse,
            MatchPolicy.of(self.settings))
        await refresh_statistics(self.pool, step.workflow_id, "mismatches")
        return Count(count=flagged)

    @activity.defn(name="weigh_again")
    @business_step
    async def weigh_again(self, job: PostInput) -> Count:
        """A redo's steps 4-6 in its scope, once per generation: the undo opened quantities, so
        the redo weighs against what is open now (docs/design.md §12)."""
        night = night_of(job.workflow_id)
        if night is None:  # a redo is always of a night; its id says which
            raise ValueError(f"{job.workflow_id!r} is not a night's workflow id")
        generation = await current_generation(self.pool, job.workflow_id)
        flagged = await comparing.weigh_again(
            self.pool, job.workflow_id, date.fromisoformat(night[0]), job.warehouse,
            MatchPolicy.of(self.settings), job.supplier_id, generation)
        await refresh_statistics(self.pool, job.workflow_id, "comparisons", "mismatches",
                                 "acceptances")
        return Count(count=flagged)
