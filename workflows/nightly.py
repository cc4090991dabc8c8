"""NightlyReconciliation: the ten steps, in order, and what to do when one cannot finish.

The workflow only decides. Every outside effect is an activity, every activity is idempotent under
keys derived from the workflow id, and only ids and counts travel through the history. Where we
are is Temporal's event history; nothing here keeps a checkpoint of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import Priority
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.handovers import HandoverActivities
    from activities.invoices import InvoiceActivities
    from activities.matching import MatchingActivities
    from activities.messages import MessageActivities
    from activities.posting import PostingActivities
    from activities.sources import SourceActivities
    from activities.weighing import WeighingActivities
    from recon.domain import steps
    from recon.domain.errors import UndoRequested
    from recon.domain.labels import RunStatus
    from recon.domain.models import (
        Decision,
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
    )
    from recon.domain.requests import REDO
    from workflows import console, decisions, display
    from workflows.decisions import DecisionDesk
    from workflows.extraction import extract_all
    from workflows.patches import (
        FAIR_WAREHOUSES,
        REDO_WEIGHS_AGAIN,
        RESUME_RERUNS_STEP,
        SIGNED_DECISIONS,
        SIGNED_REQUESTS,
        SOURCES_FETCH,
    )
    from workflows.policies import READ_TIMEOUT, RETRY, WRITE_TIMEOUT, step_heartbeat
    from workflows.requests import checked_signer, refuse_without_mandate
    from workflows.undo import undo_whole_run

T = TypeVar("T")


@workflow.defn
class NightlyReconciliation:
    @workflow.init
    def __init__(self, req: RunRequest) -> None:
        self._req = req
        # whose keys this run writes under: the night (a redo writes the night's)
        self._wf = req.redo_of or workflow.info().workflow_id
        self._progress = Progress(workflow_id="")
        self._handover: HandoverNote | None = None
        self._decision: Decision | None = None
        self._decided: list[RecordedDecision] = []
        self._desk = DecisionDesk(workflow.info().workflow_id, self._wf, req.redo_supplier,
                                  req.heartbeat_seconds)

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
        return self._desk.ignored

    def _why_not(self, d: Decision) -> str | None:
        return decisions.why_not(d, self._handover, self._decision, self._decided,
                                    workflow.info().workflow_id)

    @workflow.update
    async def decide(self, d: Decision) -> str:
        """A signed decision: checked against the approvers in Postgres before it is taken
        (workflows/decisions.py); a refusal fails the Update in one line."""
        if not workflow.patched(SIGNED_DECISIONS):  # recorded before decisions were signed
            self._decision = d
            pending = self._handover.handover_no if self._handover else 0
            return f"{d.decision} accepted for handover #{pending}"
        taken, line, refused = await self._desk.take(d, "update", self._why_not)
        if refused:
            raise ApplicationError(line, type="DecisionRefused", non_retryable=True)
        self._decision = taken or self._decision
        return line

    @decide.validator
    def _validate_decide(self, d: Decision) -> None:
        reason = self._why_not(d) or self._desk.screen(d, workflow.now())
        if reason:
            raise ValueError(reason)

    @workflow.signal
    async def decide_signal(self, d: Decision) -> None:
        """The same decision from the Web UI or `temporal workflow signal`; checked the same way,
        signature included. A signal that cannot be taken is kept on the run as ignored."""
        reason = self._why_not(d)
        if reason:
            workflow.logger.warning("ignored decision signal on handover #%s: %s",
                                    d.handover_no, reason)
            self._desk.ignore(d, reason)
            return
        if not workflow.patched(SIGNED_DECISIONS):
            self._decision = d
            return
        too_many = self._desk.screen(d, workflow.now())
        taken, line, refused = (None, too_many, True) if too_many else \
            await self._desk.take(d, "signal", self._why_not)
        if refused:
            self._desk.ignore(d, line)
        self._decision = taken or self._decision

    # ------------------------------------------------------------------ the run
    @workflow.run
    async def run(self, req: RunRequest) -> RunSummary:
        if req.redo_of is not None and workflow.patched(SIGNED_REQUESTS):
            # A redo posts money again: its signed request is checked before anything else.
            approver = await checked_signer(
                REDO, run=req.redo_of, supplier_id=req.redo_supplier, references=[],
                reason=req.redo_reason, by=req.redo_by, signed_at=req.redo_signed_at,
                signature=req.redo_signature, heartbeat_seconds=req.heartbeat_seconds,
                progress=self._progress, passkey=req.redo_passkey)
            self._req = req = req.model_copy(update={"redo_by": approver})
        try:
            summary = await self._forward(req)
        except UndoRequested as undo:
            summary = await undo_whole_run(self._req, self._wf, undo.decision, self._progress)
        # A decision still being checked (a second Update that raced the one taken) gets its
        # answer before the run ends. No command: older histories replay the same.
        await workflow.wait_condition(workflow.all_handlers_finished)
        return summary

    async def _forward(self, req: RunRequest) -> RunSummary:
        wf = self._wf
        self._progress = Progress(workflow_id=wf)
        display.set_status(self._progress, RunStatus.RUNNING)
        post = PostInput(workflow_id=wf, warehouse=req.warehouse, batch_size=req.post_batch_size,
                         supplier_id=req.redo_supplier)
        if req.redo_of is None:
            await self._read_and_compare(req)
        elif workflow.patched(REDO_WEIGHS_AGAIN):
            # The undo opened quantities: weigh what is open now (steps 4-6 in the redo's scope).
            await self._step(steps.COMPARE_QUANTITIES.name,
                             lambda: self._act(WeighingActivities.weigh_again, post))
        outbox = OutboxInput(
            workflow_id=wf, business_date=req.business_date, warehouse=req.warehouse,
            supplier_id=req.redo_supplier,
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
        display.set_status(self._progress, RunStatus.COMPLETED)
        p.current_step = None
        if summary is None:  # only in histories recorded before RESUME_RERUNS_STEP
            summary = RunSummary(
                workflow_id=wf, status=RunStatus.COMPLETED.value, invoices=p.invoices, parked=p.parked,
                mismatches=p.mismatches, ledger_posted=p.ledger_posted, adjustment_total_paise=0,
                stock_movements=p.stock_moved, debit_notes=p.debit_notes,
            )
        words = display.show_finished(
            RunStatus.COMPLETED, self._progress, summary.adjustment_total_paise,
            summary.adjustment_totals or {"INR": summary.adjustment_total_paise})
        return summary.model_copy(update={"in_words": words}) if words else summary

    async def _read_and_compare(self, req: RunRequest) -> None:
        """Steps 1-6: read, extract, match and compare. Nothing here writes to the business."""
        wf = self._wf
        step_input = StepInput(workflow_id=wf, business_date=req.business_date,
                               warehouse=req.warehouse)
        p = self._progress
        read_activities = {
            steps.FETCH_INVOICES.name: InvoiceActivities.fetch_invoices,
            steps.MATCH_ORDERS.name: MatchingActivities.match_orders,
            steps.READ_STOCK.name: MatchingActivities.read_stock,
            steps.COMPARE_QUANTITIES.name: WeighingActivities.compare_quantities,
            steps.FLAG_MISMATCHES.name: WeighingActivities.flag_mismatches,
        }
        if workflow.patched(SOURCES_FETCH):
            # Step 1 fetches what the sources hold before it fixes the night (its own name in
            # the history and the progress: older histories have no such activity).
            fetched = await self._step(steps.FETCH_SOURCES.name, lambda: self._act(
                SourceActivities.fetch_sources, step_input, WRITE_TIMEOUT))
            steps.record(p, steps.FETCH_SOURCES, fetched)
        for step in steps.READ_AND_COMPARE:
            if step is steps.EXTRACT_LINES:  # many activities in waves, not one
                result = await self._step(step.name, lambda: extract_all(
                    self._act, wf, p.invoices, self._req.extract_batch_size, self._progress,
                    self._req.model_mode, self._req.model_batch_poll_seconds))
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
            heartbeat_timeout=step_heartbeat(self._req.heartbeat_seconds, timeout),
            retry_policy=RETRY,
            summary=console.activity_summary(getattr(fn, "__name__", ""), arg),
            priority=self._priority(),
        )

    def _priority(self) -> Priority:
        """Each warehouse's night is its own fairness key: where the task queue is shared by many
        warehouses' nights (twenty start at 02:00), a server with fairness on hands their tasks out
        in turn rather than first come, first served, so a branch's one-activity step is not
        queued behind the head office's whole extraction step. A server without fairness ignores
        it. Older histories replay without it (FAIR_WAREHOUSES)."""
        if not workflow.patched(FAIR_WAREHOUSES):
            return Priority.default
        return Priority(fairness_key=self._req.warehouse)

    async def _step(self, name: str, body: Callable[[], Awaitable[T]]) -> T | None:
        """Run one step until it is done and verified. If it fails for good, hand over and do
        what the person decides: resume and retry both run the step again (it starts after its
        last committed entry: what is live is never written twice, what is missing is never
        skipped); undo stops here. No decision accepts a failed step as it stands."""
        while True:
            display.enter_step(self._progress, name)
            try:
                result = await body()
            except ActivityError as err:
                refuse_without_mandate(err, self._progress)  # no mandate: refused, never handed over
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
            display.enter_step(self._progress, name, gate=True)
            # The limits are the worker's (recon.domain.gate_policy), not the run's input.
            verdict = await self._act(HandoverActivities.check_evidence, GateInput(
                workflow_id=wf, supplier_id=self._req.redo_supplier))
            if not verdict.reasons:
                return True
            decision = await self._hand_over(
                name, None, error_type="UnclearEvidence", message="; ".join(verdict.reasons),
                next_action=decisions.GATE_NEXT_ACTION,
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
            error_type, message, next_action = decisions.describe_failure(step, err)
        self._progress.handovers += 1
        number = self._progress.handovers
        self._handover = await self._act(HandoverActivities.record_handover, HandoverRequest(
            workflow_id=workflow.info().workflow_id, posted_for=self._wf, handover_no=number,
            step=step, error_type=error_type or "Unknown", error_message=message[:4000],
            attempts=decisions.attempts_of(err), next_action=next_action,
        ))
        self._decision = None
        self._desk.new_handover()
        display.set_status(self._progress, RunStatus.AWAITING_DECISION)
        workflow.upsert_memo({"handover": self._handover.note})
        display.show_waiting(self._handover, self._progress)
        reminder = 0
        while True:
            try:
                await workflow.wait_condition(
                    lambda: self._decision is not None, timeout=decisions.until_next_morning(
                        workflow.now(), self._req.reminder_utc_time)
                )
                break
            except TimeoutError:
                reminder += 1
                await self._act(HandoverActivities.send_reminder, ReminderRequest(
                    workflow_id=workflow.info().workflow_id, handover_no=number,
                    reminder_no=reminder,
                ))
        decision = self._decision
        assert decision is not None
        recorded = RecordedDecision(
            workflow_id=workflow.info().workflow_id, handover_no=number,
            decision=decision.decision, by=decision.by, note=decision.note,
            decided_at=workflow.now().isoformat(), park=list(decision.park),
            confirmed_by=self._desk.confirmed_by,
        )
        if recorded.park:
            await self._act(HandoverActivities.park_invoices, ParkRequest(
                workflow_id=self._wf, handover_no=number, invoices=recorded.park,
                by=recorded.by, reason=recorded.note,
            ))
        await self._act(HandoverActivities.record_decision, recorded)
        self._decided.append(recorded)
        display.remember_decisions(self._decided)
        self._handover = None
        self._decision = None
        workflow.upsert_memo({"handover": None})
        display.set_status(self._progress, RunStatus.RUNNING)
        return recorded
