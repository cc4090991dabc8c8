"""NightlyReconciliation: the ten steps, in order, and what to do when one cannot finish.

The workflow only decides. Every outside effect is an activity, every activity is idempotent under
keys derived from the workflow id, and only ids and counts travel through the history. Where we
are is Temporal's event history; nothing here keeps a checkpoint of its own.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.extract_lines import ExtractionActivities
    from activities.handover import HandoverActivities
    from activities.messages import MessageActivities
    from activities.posting import PostingActivities
    from activities.reading import ReadingActivities
    from recon import steps
    from recon.errors import UndoRequested
    from recon.models import (
        DECISIONS,
        Count,
        Decision,
        ExtractBatch,
        GateInput,
        HandoverNote,
        HandoverRequest,
        IgnoredDecision,
        OutboxInput,
        ParkRequest,
        PostInput,
        Progress,
        RecordedDecision,
        ReminderRequest,
        RunRequest,
        RunSummary,
        StepInput,
        UndoRequest,
        undo_workflow_id,
    )
    from recon.run_labels import RECON_STATUS, RECON_STEP, RunStatus
    from workflows import console
    from workflows.policies import MODEL_TIMEOUT, READ_TIMEOUT, RETRY, WRITE_TIMEOUT
    from workflows.undo import UndoReconciliation

CONSOLE_PATCH = "web-ui-console-1"  # gate as ReconStep, headline and decisions in the memo

MAX_EXTRACT_ACTIVITIES = 400  # keeps a 100,000-invoice night far inside the history limits
EXTRACT_WAVE = 16  # extraction activities in flight at once

T = TypeVar("T")

# Patches (workflow.patched): runs started by older code replay the way they were recorded.
RESUME_RERUNS_STEP = "resume-reruns-failed-step"
DECISIONS_ON_RECORD = "decisions-on-record"


@workflow.defn
class NightlyReconciliation:
    def __init__(self) -> None:
        self._progress = Progress(workflow_id="")
        self._handover: HandoverNote | None = None
        self._decision: Decision | None = None
        self._decided: list[RecordedDecision] = []
        self._ignored: list[IgnoredDecision] = []
        self._wf = ""  # whose keys this run writes under: the night (a redo writes the night's)

    # ------------------------------------------------------------------ what people can see / do
    @workflow.query
    def progress(self) -> Progress:
        return self._progress

    @workflow.query
    def pending_handover(self) -> HandoverNote | None:
        return self._handover

    @workflow.query
    def decisions(self) -> list[RecordedDecision]:
        return self._decided

    @workflow.query
    def ignored_decisions(self) -> list[IgnoredDecision]:
        return self._ignored

    def _why_not(self, d: Decision) -> str | None:
        """Why a decision cannot be taken, or None. A decision names the handover it answers:
        one for any other handover (an old one, or one nobody has read yet) is refused."""
        if self._handover is None:
            if self._decided:
                last = self._decided[-1]
                return (f"handover #{last.handover_no} was already decided: {last.decision} "
                        f"by {last.by}; no handover is pending now")
            return "no handover is pending for this run"
        pending = self._handover.handover_no
        if d.handover_no != pending:
            if not d.handover_no:
                return f"say which handover you answer: --handover {pending} is pending"
            return (f"handover #{d.handover_no} is not the pending one: #{pending} is "
                    f"(read it with `recon handover {workflow.info().workflow_id}`)")
        if self._decision is not None:
            return f"handover #{pending} was already decided"
        if d.decision not in DECISIONS:
            return f"unknown decision {d.decision!r}: use one of {', '.join(DECISIONS)}"
        if not d.by.strip():
            return "say who decides (--by NAME)"
        if d.park and d.decision == "undo":
            return "--park goes with resume or retry: an undo reverses the whole run anyway"
        if d.park and not d.note.strip():
            return "say why these invoices are parked (--note REASON)"
        return None

    @workflow.update
    async def decide(self, d: Decision) -> str:
        self._decision = d
        return f"{d.decision} accepted for handover #{self._handover.handover_no if self._handover else 0}"

    @decide.validator
    def _validate_decide(self, d: Decision) -> None:
        reason = self._why_not(d)
        if reason:
            raise ValueError(reason)

    @workflow.signal
    def decide_signal(self, d: Decision) -> None:
        """The same decision from the Web UI or `temporal workflow signal`; checked the same way."""
        reason = self._why_not(d)
        if reason:
            workflow.logger.warning("ignored decision signal %s: %s", d, reason)
            self._ignored.append(IgnoredDecision(
                decision=d.decision, by=d.by, handover_no=d.handover_no, reason=reason,
                received_at=workflow.now().isoformat(),
            ))
            if workflow.patched(DECISIONS_ON_RECORD):
                workflow.upsert_memo(
                    {"ignored_decisions": [i.model_dump() for i in self._ignored]}
                )
            return
        self._decision = d

    # ------------------------------------------------------------------ the run
    @workflow.run
    async def run(self, req: RunRequest) -> RunSummary:
        self._req = req
        self._wf = req.redo_of or workflow.info().workflow_id
        try:
            return await self._forward(req)
        except UndoRequested as undo:
            return await self._undo_whole_run(undo.decision)

    async def _undo_whole_run(self, decision: RecordedDecision) -> RunSummary:
        """A person decided the run must go: compensate everything it did (for a redo of one
        supplier: that supplier), as a child workflow with the same id `recon undo` would use,
        so the two can never both run."""
        self._progress.current_step = "undo"
        self._set_status(RunStatus.UNDOING)
        request = UndoRequest(
            run_workflow_id=self._wf, supplier_id=self._req.redo_supplier,
            reason=decision.note or f"handover #{decision.handover_no}: undo",
            by=decision.by, heartbeat_seconds=self._req.heartbeat_seconds,
        )
        await workflow.execute_child_workflow(
            UndoReconciliation.run, request, id=undo_workflow_id(request),
        )
        self._set_status(RunStatus.UNDONE)
        self._progress.current_step = None
        p = self._progress
        self._show_finished(RunStatus.UNDONE, None)
        return RunSummary(
            workflow_id=self._wf, status=RunStatus.UNDONE.value, invoices=p.invoices, parked=p.parked,
            mismatches=p.mismatches, ledger_posted=0, adjustment_total_paise=0,
            stock_movements=0, debit_notes=0,
        )

    async def _forward(self, req: RunRequest) -> RunSummary:
        wf = self._wf
        self._progress = Progress(workflow_id=wf)
        self._set_status(RunStatus.RUNNING)
        if req.redo_of is None:
            await self._read_and_compare(req)
        post = PostInput(workflow_id=wf, warehouse=req.warehouse, batch_size=req.post_batch_size,
                         supplier_id=req.redo_supplier)
        outbox = OutboxInput(
            workflow_id=wf, business_date=req.business_date, warehouse=req.warehouse,
            finance_head_email=req.finance_head_email, supplier_id=req.redo_supplier,
        )
        p = self._progress
        while True:
            for step, activity in ((steps.POST_ADJUSTMENTS, PostingActivities.post_adjustments),
                                   (steps.UPDATE_STOCK, PostingActivities.update_stock)):
                result = await self._step(
                    step.name, lambda act=activity: self._act(act, post, WRITE_TIMEOUT))
                steps.record(p, step, result)
            if await self._gate_before_debit_notes(wf):
                break
        notes = await self._step(
            steps.SEND_DEBIT_NOTES.name,
            lambda: self._act(MessageActivities.send_debit_notes, outbox, WRITE_TIMEOUT),
        )
        steps.record(p, steps.SEND_DEBIT_NOTES, notes)
        summary = await self._step(
            steps.SEND_SUMMARY.name, lambda: self._act(MessageActivities.send_summary, outbox, WRITE_TIMEOUT)
        )
        self._set_status(RunStatus.COMPLETED)
        p.current_step = None
        if summary is None:  # only in histories recorded before RESUME_RERUNS_STEP
            summary = RunSummary(
                workflow_id=wf, status=RunStatus.COMPLETED.value, invoices=p.invoices, parked=p.parked,
                mismatches=p.mismatches, ledger_posted=p.ledger_posted, adjustment_total_paise=0,
                stock_movements=p.stock_moved, debit_notes=p.debit_notes,
            )
        self._show_finished(RunStatus.COMPLETED, summary.adjustment_total_paise)
        return summary

    async def _read_and_compare(self, req: RunRequest) -> None:
        """Steps 1-6: read, extract, match and compare. Nothing here writes to the business."""
        wf = self._wf
        step_input = StepInput(workflow_id=wf, business_date=req.business_date,
                               warehouse=req.warehouse)
        p = self._progress
        read_activities = {
            steps.FETCH_INVOICES.name: ReadingActivities.fetch_invoices,
            steps.MATCH_ORDERS.name: ReadingActivities.match_orders,
            steps.READ_STOCK.name: ReadingActivities.read_stock,
            steps.COMPARE_QUANTITIES.name: ReadingActivities.compare_quantities,
            steps.FLAG_MISMATCHES.name: ReadingActivities.flag_mismatches,
        }
        for step in steps.READ_AND_COMPARE:
            if step is steps.EXTRACT_LINES:  # many activities in waves, not one
                result = await self._step(step.name, lambda: self._extract_all(wf, p.invoices))
            else:
                result = await self._step(
                    step.name, lambda act=read_activities[step.name]: self._act(act, step_input))
            steps.record(p, step, result)

    # ------------------------------------------------------------------ helpers
    async def _act(self, fn: Callable[..., Awaitable[T]], arg: Any,
                   timeout: timedelta = READ_TIMEOUT) -> T:
        return await workflow.execute_activity_method(
            fn, arg,
            start_to_close_timeout=timeout,
            heartbeat_timeout=timedelta(seconds=self._req.heartbeat_seconds),
            retry_policy=RETRY,
            summary=console.activity_summary(getattr(fn, "__name__", ""), arg),
        )

    async def _extract_all(self, wf: str, invoices: int) -> Count:
        """Many model calls in parallel, in batches: few enough activities for any night."""
        size = max(self._req.extract_batch_size, math.ceil(invoices / MAX_EXTRACT_ACTIVITIES))
        batches = [
            ExtractBatch(workflow_id=wf, first_seq=first, last_seq=min(first + size - 1, invoices))
            for first in range(1, invoices + 1, size)
        ]
        total = Count(count=0, parked=0)
        for start in range(0, len(batches), EXTRACT_WAVE):
            wave = batches[start:start + EXTRACT_WAVE]
            # Let the whole wave settle before failing: a retry must never overlap a batch that
            # is still calling the model, or an invoice could be paid for twice.
            results = await asyncio.gather(
                *(self._act(ExtractionActivities.extract_lines, b, MODEL_TIMEOUT) for b in wave),
                return_exceptions=True,
            )
            for r in results:
                if isinstance(r, BaseException):
                    raise r
            for r in results:
                total.count += r.count
                total.parked += r.parked
            self._progress.extracted = total.count
            self._show_step(steps.EXTRACT_LINES.name)
        return total

    async def _step(self, name: str, body: Callable[[], Awaitable[T]]) -> T | None:
        """Run one step until it is done and verified. If it fails for good, hand over and do
        what the person decides: resume and retry both run the step again (it starts after its
        last committed entry: what is live is never written twice, what is missing is never
        skipped); undo stops here. No decision accepts a failed step as it stands."""
        while True:
            self._enter_step(name)
            try:
                result = await body()
            except ActivityError as err:
                decision = await self._hand_over(name, err)
                if decision.decision == "undo":
                    raise UndoRequested(decision) from err
                if decision.decision == "resume" and not workflow.patched(RESUME_RERUNS_STEP):
                    # Histories recorded before the patch accepted the step as it stood.
                    self._progress.steps_done.append(name)
                    return None
                continue
            self._progress.steps_done.append(name)
            return result

    async def _gate_before_debit_notes(self, wf: str) -> bool:
        """Debit notes cannot be unsent: send them only on clear evidence, else ask a person.
        True: go on to the notes. False: the ledger or stock no longer holds what the night
        calls for and the person chose to go on: post and book again first (never skip)."""
        name = steps.GATE.name
        while True:
            self._enter_step(name, gate=True)
            verdict = await self._act(HandoverActivities.check_evidence, GateInput(
                workflow_id=wf,
                max_parked_invoice_ratio=self._req.max_parked_invoice_ratio,
                max_adjustment_total_paise=self._req.max_adjustment_total_paise,
                max_adjustment_share=self._req.max_adjustment_share,
                supplier_id=self._req.redo_supplier,
            ))
            if not verdict.reasons:
                return True
            decision = await self._hand_over(
                name, None, error_type="UnclearEvidence", message="; ".join(verdict.reasons),
                next_action="send the debit notes (resume), check the evidence again (retry), "
                "or undo the run (undo)",
            )
            if decision.decision == "undo":
                raise UndoRequested(decision)
            if verdict.unverified and workflow.patched(RESUME_RERUNS_STEP):
                return False  # notes never go out on an unverified ledger: post again first
            if decision.decision == "resume":
                return True
            # retry: look at the evidence again (invoices the person parked are left out).

    async def _hand_over(
        self, step: str, err: ActivityError | None, *, error_type: str = "",
        message: str = "", next_action: str = "",
    ) -> RecordedDecision:
        if err is not None:
            cause = err.cause
            error_type = cause.type if isinstance(cause, ApplicationError) and cause.type else \
                type(cause).__name__ if cause else "ActivityError"
            message = cause.message if isinstance(cause, ApplicationError) else \
                str(cause) if cause else str(err)
            next_action = (
                f"run {step} again from its last committed entry, once the cause is fixed "
                f"(retry or resume: nothing already posted is posted twice, nothing missing is "
                f"skipped; add --park INVOICE --note WHY to go on without named invoices), or "
                f"undo the run (undo)"
            )
        self._progress.handovers += 1
        number = self._progress.handovers
        self._handover = await self._act(HandoverActivities.record_handover, HandoverRequest(
            workflow_id=workflow.info().workflow_id, posted_for=self._wf, handover_no=number,
            step=step, error_type=error_type or "Unknown", error_message=message[:4000],
            attempts=self._attempts(err), next_action=next_action,
            finance_head_email=self._req.finance_head_email,
        ))
        self._decision = None
        self._set_status(RunStatus.AWAITING_DECISION)
        workflow.upsert_memo({"handover": self._handover.note})
        self._show_waiting()
        reminder = 0
        while True:
            try:
                await workflow.wait_condition(
                    lambda: self._decision is not None, timeout=self._until_next_morning()
                )
                break
            except TimeoutError:
                reminder += 1
                await self._act(HandoverActivities.send_reminder, ReminderRequest(
                    workflow_id=workflow.info().workflow_id, handover_no=number,
                    reminder_no=reminder, finance_head_email=self._req.finance_head_email,
                ))
        decision = self._decision
        assert decision is not None
        recorded = RecordedDecision(
            workflow_id=workflow.info().workflow_id, handover_no=number,
            decision=decision.decision, by=decision.by, note=decision.note,
            decided_at=workflow.now().isoformat(), park=list(decision.park),
        )
        if recorded.park:
            await self._act(HandoverActivities.park_invoices, ParkRequest(
                workflow_id=self._wf, handover_no=number, invoices=recorded.park,
                by=recorded.by, reason=recorded.note,
            ))
        await self._act(HandoverActivities.record_decision, recorded)
        self._decided.append(recorded)
        self._remember_decisions()
        self._handover = None
        self._decision = None
        workflow.upsert_memo({"handover": None})
        self._set_status(RunStatus.RUNNING)
        return recorded

    @staticmethod
    def _attempts(err: ActivityError | None) -> int:
        if err is None:
            return 0
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.details:
            detail = cause.details[0]
            if isinstance(detail, dict) and "attempt" in detail:
                return int(detail["attempt"])
        return 1

    def _until_next_morning(self) -> timedelta:
        now = workflow.now()
        hour, minute, second = (int(part) for part in
                                (self._req.reminder_utc_time.split(":") + ["0", "0"])[:3])
        morning = now.replace(hour=hour, minute=minute, second=second, microsecond=0)
        if morning <= now:
            morning += timedelta(days=1)
        return morning - now

    def _set_status(self, status: RunStatus) -> None:
        self._progress.status = status.value
        workflow.upsert_search_attributes([RECON_STATUS.value_set(status.value)])

    # ------------------------------------------------------------------ the Web UI as console
    def _show_step(self, name: str) -> None:
        workflow.set_current_details(console.step_details(name, self._progress))

    def _enter_step(self, name: str, gate: bool = False) -> None:
        """The step people see: progress query, ReconStep, current details. The gate is a step
        of its own in ReconStep too (newer runs only: an older history did not record it)."""
        self._progress.current_step = name
        if not gate or workflow.patched(CONSOLE_PATCH):
            workflow.upsert_search_attributes([RECON_STEP.value_set(name)])
        self._show_step(name)

    def _show_waiting(self) -> None:
        h = self._handover
        if h is not None:
            workflow.set_current_details(console.waiting_details(
                h.handover_no, h.step, h.error_type, h.error_message, self._progress))

    def _remember_decisions(self) -> None:
        """The record of decisions stays in the memo after the run moves on."""
        if workflow.patched(CONSOLE_PATCH):
            workflow.upsert_memo({"decisions": console.decision_record(self._decided)})

    def _show_finished(self, status: RunStatus, adjustment_total_paise: int | None) -> None:
        workflow.set_current_details(console.finished_details(status.value, self._progress))
        if workflow.patched(CONSOLE_PATCH):
            workflow.upsert_memo({"headline": console.headline(
                status.value, self._progress, adjustment_total_paise)})
