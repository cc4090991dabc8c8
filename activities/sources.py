"""Step 1's first half: fetch what the night's sources hold (recon/sources/fetch.py) before
`fetch_invoices` fixes the working set. Touches the world (mail servers, folders, Postgres);
the workflow only decides when."""

from __future__ import annotations

from datetime import date

from temporalio import activity

from activities.resources import Room
from activities.step import business_step
from recon.domain.models import Count, StepInput
from recon.sources.fetch import Night, fetch_night


class SourceActivities(Room):
    """Step 1: the sources."""

    @activity.defn(name="fetch_sources")
    @business_step
    async def fetch_sources(self, step: StepInput) -> Count:
        """Every new message and file of the warehouse's sources, each taken once. An ERP file
        that is refused fails the step for good (the night hands over naming file:line: why);
        an unreachable server is temporary (ridden out within the outage window)."""
        night = Night(step.workflow_id, date.fromisoformat(step.business_date), step.warehouse,
                      max_message_bytes=self.settings.mail_max_message_bytes,
                      max_attachments=self.settings.mail_max_attachments)
        done = await fetch_night(self.pool, night)
        activity.logger.info("fetched from the sources: %s imported, %s filed, %s loaded",
                             done.imported, done.filed, done.loaded)
        return Count(count=done.imported + done.loaded, parked=done.filed)
