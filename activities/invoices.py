"""Step 1: read the night's invoices into the run's working set, once. Nothing here writes to
the business; the statements are in recon/store/invoices.py and fill the run's rows once.
"""

from __future__ import annotations

from datetime import date

from temporalio import activity

from activities.resources import Room
from activities.statistics import refresh_statistics
from activities.step import business_step
from recon.domain.models import Count, StepInput
from recon.store import invoices


class InvoiceActivities(Room):
    """Step 1."""

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
