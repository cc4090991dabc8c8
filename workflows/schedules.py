"""NightlyStarter: what the nightly schedule runs. It starts the night under its business id.

A Schedule names the workflows it starts `{schedule id}-{timestamp}`, but a night must keep the id
`recon-{date}-{warehouse}` (every idempotency key starts with it). So the schedule starts this
small workflow, which reads the firing's scheduled time, resolves the business date in the
schedule's time zone, and starts NightlyReconciliation as a child that outlives it
(ParentClosePolicy.ABANDON: terminating a starter never touches the night).

The starter then waits for the night to finish. That is what makes the schedule's overlap policy
mean "never two runs of one warehouse at once": while a night runs (or waits for a person), its
starter is running, so another firing is skipped (SKIP) or queued behind it (backfill, BUFFER_ALL).
A night that exists already (finished, or started by hand) is refused by the id reuse policy and
reported as "exists": nothing is started twice.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import SearchAttributeKey, WorkflowIDReusePolicy
from temporalio.exceptions import ChildWorkflowError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from activities.schedules import ScheduleActivities
    from recon.domain.keys import workflow_id_for
    from recon.domain.labels import night_start_options
    from recon.domain.schedules import NightlyStart, NightToResolve, StarterOutcome
    from workflows.nightly import NightlyReconciliation

SCHEDULED_START = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
SCHEDULE_ID = SearchAttributeKey.for_keyword("TemporalScheduledById")


@workflow.defn
class NightlyStarter:
    @workflow.run
    async def run(self, req: NightlyStart) -> StarterOutcome:
        info = workflow.info()
        scheduled = info.typed_search_attributes.get(SCHEDULED_START) or info.start_time
        night = await workflow.execute_activity_method(
            ScheduleActivities.resolve_night,
            NightToResolve(scheduled_at=scheduled.isoformat(), time_zone=req.time_zone,
                           lag_days=req.lag_days, warehouse=req.warehouse),
            start_to_close_timeout=timedelta(seconds=30),
            summary=f"which night: {scheduled:%Y-%m-%d %H:%M} UTC in {req.time_zone}",
        )
        wid = workflow_id_for(night.business_date, req.warehouse)
        by = info.typed_search_attributes.get(SCHEDULE_ID) or "a schedule"
        try:
            handle = await workflow.start_child_workflow(
                NightlyReconciliation.run,
                req.run.model_copy(update={"business_date": night.business_date}),
                id=wid,
                task_queue=info.task_queue,
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                **night_start_options(night.business_date, req.warehouse, night.invoices,
                                      f"schedule {by}"),
            )
        except WorkflowAlreadyStartedError:
            workflow.logger.info("night %s exists already: nothing started", wid)
            workflow.set_current_details(f"{wid} exists already: nothing started")
            return StarterOutcome(workflow_id=wid, business_date=night.business_date,
                                  outcome="exists", detail="the night was started before")
        workflow.set_current_details(f"started {wid}; waiting for it to finish")
        try:
            summary = await handle
        except ChildWorkflowError as exc:
            return StarterOutcome(workflow_id=wid, business_date=night.business_date,
                                  outcome="failed", detail=str(exc.cause or exc)[:500])
        if summary.in_words:  # the starter's page ends on the night in words too (no command)
            workflow.set_current_details(f"{wid}: {summary.in_words}")
        return StarterOutcome(workflow_id=wid, business_date=night.business_date,
                              outcome=summary.status.lower(), detail=summary.in_words)
