"""The nightly schedule's one activity: which night a firing stands for.

Time-zone data is read here, not in workflow code, so a tzdata update can never change what a
recorded history replays to: the answer is in the history.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import activity

from activities.resources import Room
from recon.domain.schedules import NightResolved, NightToResolve, business_date_of
from recon.store.invoices import invoices_waiting


class ScheduleActivities(Room):
    """The nightly schedule's one activity."""

    @activity.defn(name="resolve_night")
    async def resolve_night(self, req: NightToResolve) -> NightResolved:
        """The business date of a firing and the invoices waiting for it (for the run's details)."""
        day = business_date_of(datetime.fromisoformat(req.scheduled_at), req.time_zone, req.lag_days)
        invoices = await invoices_waiting(self.pool, day, req.warehouse)
        return NightResolved(business_date=day.isoformat(), invoices=invoices)
