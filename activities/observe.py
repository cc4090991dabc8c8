"""What every activity and run tells the logs and the metrics, in one worker interceptor, so the
step code stays about business.

Log lines go through the SDK's loggers, whose `extra` carries workflow id, run id, activity type
and attempt (recon/runtime/logs.py flattens them). They name ids and counts only: never a document's text
and never an input payload. A retry is a WARNING line with the attempt number and where the last
attempt's heartbeat said it had got to; a handover is a WARNING line with its number and step.
"""

from __future__ import annotations

import time
from typing import Any

from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError, FailureError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

_PARKING_STEPS = ("extract_lines", "match_orders")


def _count(name: str, description: str, value: int, **labels: str) -> None:
    if value:
        activity.metric_meter().create_counter(name, description).add(value, labels or None)


def _resumed_from() -> Any:
    details = activity.info().heartbeat_details
    return details[0] if details else None


class _ActivityObserver(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        step = info.activity_type
        if info.attempt > 1:
            activity.logger.warning("retrying %s: attempt %s", step, info.attempt,
                                    extra={"resumed_from": _resumed_from()})
            _count("recon_step_retries", "attempts after the first", 1, step=step)
        else:
            activity.logger.info("%s started", step)
        began = time.monotonic()
        try:
            result = await self.next.execute_activity(input)
        except Exception as exc:
            error = (exc.type if isinstance(exc, ApplicationError) and exc.type
                     else type(exc).__name__)
            final = isinstance(exc, ApplicationError) and exc.non_retryable
            activity.logger.warning(
                "%s attempt %s failed: %s", step, info.attempt, error,
                extra={"error_type": error, "will_retry": not final,
                       "error": str(exc).splitlines()[0][:200] if str(exc) else ""},
            )
            _count("recon_step_failures", "attempts that raised", 1, step=step, error=error)
            raise
        activity.logger.info("%s finished", step,
                             extra={"seconds": round(time.monotonic() - began, 3)})
        _after(step, input.args, result)
        return result


def _after(step: str, args: Any, result: Any) -> None:
    """Business counters from a step's result (ids and counts only)."""
    if step in _PARKING_STEPS:
        _count("recon_items_parked", "items parked for a person", getattr(result, "parked", 0),
               step=step)
    elif step == "post_adjustments":
        _count("recon_ledger_entries_posted", "ledger entries inserted",
               getattr(result, "inserted", 0))
    elif step == "update_stock":
        _count("recon_stock_movements_posted", "stock movements inserted",
               getattr(result, "inserted", 0))
    elif step == "record_handover":
        activity.logger.warning(
            "handed over to a person: handover #%s at %s (%s)", result.handover_no,
            result.step, result.error_type,
            extra={"handover_no": result.handover_no, "failed_step": result.step,
                   "error_type": result.error_type},
        )
        _count("recon_handovers", "handovers written", 1, step=result.step)
    elif step == "record_decision" and args:
        decided = args[0]
        activity.logger.info("decision on handover #%s: %s by %s", decided.handover_no,
                             decided.decision, decided.by,
                             extra={"handover_no": decided.handover_no,
                                    "decision": decided.decision, "by": decided.by})


class _WorkflowObserver(WorkflowInboundInterceptor):
    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        try:
            result = await super().execute_workflow(input)
        except FailureError:  # fails the run (other exceptions only retry the workflow task)
            self._finished("failed")
            raise
        self._finished(str(getattr(result, "status", "finished")).lower())
        return result

    @staticmethod
    def _finished(outcome: str) -> None:
        """Metrics and logs from workflow code are skipped by the SDK during replay."""
        if workflow.info().workflow_type != "NightlyReconciliation":
            return
        workflow.metric_meter().create_counter("recon_runs", "nights finished").add(
            1, {"outcome": outcome})
        workflow.logger.info("run finished: %s", outcome, extra={"outcome": outcome})


class ObservingInterceptor(Interceptor):
    """Registered on the worker (worker.py)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityObserver(next)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _WorkflowObserver
