"""Steps 5 and 6: weigh each matched line against its order and flag every mismatch (and a
redo's weighing again). Nothing here writes to the business; the statements are in
recon/store/weighing.py and fill the run's rows once.
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
from recon.store import weighing
from recon.store.generations import current_generation


class WeighingActivities(Room):
    """Steps 5 and 6, and a redo's weighing again."""

    @activity.defn(name="compare_quantities")
    @business_step
    async def compare_quantities(self, step: StepInput) -> Count:
        """Step 5. Each matched line weighed against its PO line's open quantity, cumulatively
        across nights: accepted, held awaiting receipt, or claimed short (recon/store/weighing.py)."""
        compared = await weighing.compare_quantities(
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
        flagged = await weighing.flag_mismatches(
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
        flagged = await weighing.weigh_again(
            self.pool, job.workflow_id, date.fromisoformat(night[0]), job.warehouse,
            MatchPolicy.of(self.settings), job.supplier_id, generation)
        await refresh_statistics(self.pool, job.workflow_id, "comparisons", "mismatches",
                                 "acceptances")
        return Count(count=flagged)
