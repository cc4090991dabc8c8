"""Stand-in activities registered under the real activity names: they return the real result
models, record every call in order, and fail when a test tells them to. No Postgres."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from recon.domain.decisions import DecisionCheck, DecisionVerdict
from recon.domain.models import (
    Count,
    ExtractBatch,
    GateInput,
    GateVerdict,
    GenerationRequest,
    HandoverNote,
    HandoverRequest,
    OutboxInput,
    ParkRequest,
    PostInput,
    PostResult,
    RecordedDecision,
    ReminderRequest,
    Reversed,
    RunRequest,
    RunSummary,
    StepInput,
    UndoRequest,
)
from recon.domain.requests import RequestCheck, RequestVerdict
from workflows.nightly import NightlyReconciliation
from workflows.undo import UndoReconciliation

INVOICES = 3
STANDIN_SIGNATURE = "signed-by-a-stand-in"
MISMATCHES = 2


def period_locked() -> ApplicationError:
    """What business_step makes of an unknown error: non-retryable, type and message apart."""
    return ApplicationError("period locked", {"class": "unknown", "attempt": 1},
                            type="PeriodLocked", non_retryable=True)


class NightState:
    """What one test's night saw: every call in order with its input, and what to fail."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.inputs: dict[str, list[Any]] = defaultdict(list)
        self.failures: dict[str, list[BaseException]] = defaultdict(list)
        self.verdicts: list[GateVerdict] = []
        # decisions the signature check saw; kept apart from `calls`, whose order the step
        # tests read (a check runs while the run waits, not as a step)
        self.checks: list[DecisionCheck] = []
        self.requests: list[RequestCheck] = []  # undo and redo requests checked, apart too

    def fail(self, name: str, *errors: BaseException) -> None:
        """The next calls of `name` raise these, one per call."""
        self.failures[name].extend(errors)


class StandIns:
    """One set of stand-ins for the session's worker; each call is booked to the night it
    belongs to (an undo child `undo-X` belongs to night X), so tests share one worker."""

    def __init__(self) -> None:
        self.nights: dict[str, NightState] = {}

    def _night(self) -> NightState:
        wf = activity.info().workflow_id or ""
        return self.nights[wf.removeprefix("undo-")]

    @property
    def verdicts(self) -> list[GateVerdict]:
        return self._night().verdicts

    def _called(self, name: str, arg: Any) -> None:
        night = self._night()
        night.calls.append(name)
        night.inputs[name].append(arg)
        if night.failures[name]:
            raise night.failures[name].pop(0)

    # ---------------------------------------------------------------- steps 1-6
    @activity.defn(name="fetch_sources")
    async def fetch_sources(self, step: StepInput) -> Count:
        self._called("fetch_sources", step)
        return Count(count=0)

    @activity.defn(name="fetch_invoices")
    async def fetch_invoices(self, step: StepInput) -> Count:
        self._called("fetch_invoices", step)
        return Count(count=INVOICES)

    @activity.defn(name="extract_lines")
    async def extract_lines(self, batch: ExtractBatch) -> Count:
        self._called("extract_lines", batch)
        return Count(count=batch.last_seq - batch.first_seq + 1)

    @activity.defn(name="match_orders")
    async def match_orders(self, step: StepInput) -> Count:
        self._called("match_orders", step)
        return Count(count=INVOICES)

    @activity.defn(name="read_stock")
    async def read_stock(self, step: StepInput) -> Count:
        self._called("read_stock", step)
        return Count(count=INVOICES)

    @activity.defn(name="compare_quantities")
    async def compare_quantities(self, step: StepInput) -> Count:
        self._called("compare_quantities", step)
        return Count(count=INVOICES)

    @activity.defn(name="flag_mismatches")
    async def flag_mismatches(self, step: StepInput) -> Count:
        self._called("flag_mismatches", step)
        return Count(count=MISMATCHES)

    @activity.defn(name="weigh_again")
    async def weigh_again(self, job: PostInput) -> Count:
        self._called("weigh_again", job)
        return Count(count=MISMATCHES)

    # ---------------------------------------------------------------- business writes
    @activity.defn(name="post_adjustments")
    async def post_adjustments(self, job: PostInput) -> PostResult:
        self._called("post_adjustments", job)
        return PostResult(expected=MISMATCHES, inserted=MISMATCHES, already_there=0, amount_paise=12_500)

    @activity.defn(name="update_stock")
    async def update_stock(self, job: PostInput) -> PostResult:
        self._called("update_stock", job)
        return PostResult(expected=MISMATCHES, inserted=MISMATCHES, already_there=0)

    @activity.defn(name="check_evidence")
    async def check_evidence(self, gate: GateInput) -> GateVerdict:
        self._called("check_evidence", gate)
        return self.verdicts.pop(0) if self.verdicts else GateVerdict()

    @activity.defn(name="send_debit_notes")
    async def send_debit_notes(self, job: OutboxInput) -> Count:
        self._called("send_debit_notes", job)
        return Count(count=1)

    @activity.defn(name="send_summary")
    async def send_summary(self, job: OutboxInput) -> RunSummary:
        self._called("send_summary", job)
        return RunSummary(
            workflow_id=job.workflow_id, status="Completed", invoices=INVOICES, parked=0,
            mismatches=MISMATCHES, ledger_posted=MISMATCHES, adjustment_total_paise=12_500,
            stock_movements=MISMATCHES, debit_notes=1, summary_key=f"{job.workflow_id}:summary",
        )

    # ---------------------------------------------------------------- handover
    @activity.defn(name="record_handover")
    async def record_handover(self, req: HandoverRequest) -> HandoverNote:
        self._called("record_handover", req)
        return HandoverNote(
            workflow_id=req.workflow_id, handover_no=req.handover_no, step=req.step,
            error_type=req.error_type, error_message=req.error_message, attempts=req.attempts,
            note=f"handover #{req.handover_no}: {req.step} stopped: {req.error_type}",
        )

    @activity.defn(name="record_decision")
    async def record_decision(self, d: RecordedDecision) -> None:
        self._called("record_decision", d)

    @activity.defn(name="park_invoices")
    async def park_invoices(self, req: ParkRequest) -> int:
        self._called("park_invoices", req)
        return len(req.invoices)

    @activity.defn(name="check_decision")
    async def check_decision(self, check: DecisionCheck) -> DecisionVerdict:
        """The signature check's stand-in: a decision carrying STANDIN_SIGNATURE is signed by
        its `by`; anything else is refused as the real check refuses an unsigned one."""
        self._night().checks.append(check)
        if check.signature != STANDIN_SIGNATURE:
            return DecisionVerdict(refused=f"unsigned decision by {check.by!r}")
        return DecisionVerdict(approver=check.by)

    @activity.defn(name="check_signed_request")
    async def check_signed_request(self, check: RequestCheck) -> RequestVerdict:
        """The request check's stand-in: signed (by its `by`) when it carries STANDIN_SIGNATURE."""
        self._night().requests.append(check)
        if check.signature != STANDIN_SIGNATURE:
            return RequestVerdict(refused=f"unsigned {check.purpose} by {check.by!r}")
        return RequestVerdict(approver=check.by)

    @activity.defn(name="send_reminder")
    async def send_reminder(self, req: ReminderRequest) -> None:
        self._called("send_reminder", req)

    # ---------------------------------------------------------------- undo
    @activity.defn(name="open_next_generation")
    async def open_next_generation(self, req: GenerationRequest) -> int:
        self._called("open_next_generation", req)
        return 2

    @activity.defn(name="withdraw_debit_notes")
    async def withdraw_debit_notes(self, req: UndoRequest) -> Reversed:
        self._called("withdraw_debit_notes", req)
        return Reversed(count=1)

    @activity.defn(name="reverse_stock_movements")
    async def reverse_stock_movements(self, req: UndoRequest) -> Reversed:
        self._called("reverse_stock_movements", req)
        return Reversed(count=MISMATCHES)

    @activity.defn(name="reverse_ledger_entries")
    async def reverse_ledger_entries(self, req: UndoRequest) -> Reversed:
        self._called("reverse_ledger_entries", req)
        return Reversed(count=MISMATCHES, paise=12_500)

    def activities(self) -> list:
        return [
            self.fetch_sources, self.fetch_invoices, self.extract_lines, self.match_orders, self.read_stock,
            self.compare_quantities, self.flag_mismatches, self.weigh_again,
            self.post_adjustments,
            self.update_stock, self.check_evidence, self.send_debit_notes, self.send_summary,
            self.record_handover, self.record_decision, self.park_invoices, self.send_reminder,
            self.check_decision, self.check_signed_request,
            self.open_next_generation, self.withdraw_debit_notes, self.reverse_stock_movements,
            self.reverse_ledger_entries,
        ]


TASK_QUEUE = f"workflow-tests-{uuid.uuid4().hex[:8]}"
STANDINS = StandIns()


@asynccontextmanager
async def standin_worker(client: Client) -> AsyncIterator[None]:
    """One in-process worker for all the workflow tests: the real workflows, stand-in activities.
    (A worker per test cost up to a second each on shutdown, waiting out its long polls.)"""
    async with Worker(
        client, task_queue=TASK_QUEUE,
        workflows=[NightlyReconciliation, UndoReconciliation],
        activities=STANDINS.activities(),
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
        graceful_shutdown_timeout=timedelta(seconds=1),
    ):
        yield


class Night:
    """One test's night: its own warehouse (so its own workflow id) and what its activities saw."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.standins = NightState()

    async def start(self, warehouse: str = "", **changes: Any) -> WorkflowHandle:
        warehouse = warehouse or f"w{uuid.uuid4().hex[:8]}"
        req = RunRequest(business_date="2026-10-13", warehouse=warehouse, heartbeat_seconds=2.0,
                         **changes)
        wf = f"redo-{req.redo_of}-g2" if req.redo_of else f"recon-2026-10-13-{warehouse}"
        STANDINS.nights[wf] = self.standins
        return await self.client.start_workflow(
            NightlyReconciliation.run, req, id=wf, task_queue=TASK_QUEUE,
            execution_timeout=timedelta(minutes=2),
        )


@asynccontextmanager
async def night_with_standins(client: Client) -> AsyncIterator[Night]:
    yield Night(client)
