"""Steps 3 and 4: match lines to purchase orders and snapshot the stock received. Nothing here
writes to the business; the statements are in recon/store/matching.py and fill the run's rows once.
"""

from __future__ import annotations

from datetime import date

from temporalio import activity

from activities.resources import Room
from activities.statistics import refresh_statistics
from activities.step import business_step
from recon.domain.match_policy import MatchPolicy
from recon.domain.models import Count, StepInput
from recon.store import matching


class MatchingActivities(Room):
    """Steps 3 and 4."""

    @activity.defn(name="match_orders")
    @business_step
    async def match_orders(self, step: StepInput) -> Count:
        """Step 3. Lines that match no purchase order, or whose invoice is dated before its order
        or outside the window around the business date, are parked; the others go on."""
        # The extraction filled these in many small transactions: plan on what they hold now.
        await refresh_statistics(self.pool, step.workflow_id, "invoice_lines", "extractions",
                                 "parked_items")
        matched, parked = await matching.match_orders(
            self.pool, step.workflow_id, date.fromisoformat(step.business_date), step.warehouse,
            MatchPolicy.of(self.settings).invoice_date_window_days)
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
