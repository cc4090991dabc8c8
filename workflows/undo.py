"""UndoReconciliation: a saga's compensations, as a workflow of its own.

Its id is derived from the run and the scope, so an undo interrupted by a crash resumes from its
own history and starting the same undo twice is the same workflow. Compensations run newest
first, so each starts from the state its own step left: withdrawal notes, stock, then ledger.
Before any of them, the request's signature is checked (workflows/requests.py), unless the undo
is the one a night started for itself after a signed decision; either way each activity finds
its mandate in Postgres (a verified undo of the night and scope, recon/store/mandates.py) or the
undo ends refused.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.undo import UndoActivities
    from recon.domain.keys import undo_workflow_id
    from recon.domain.labels import RECON_STATUS, RECON_STEP, RunStatus, undo_start_options
    from recon.domain.models import (
        GenerationRequest,
        Progress,
        RecordedDecision,
        Reversed,
        RunRequest,
        RunSummary,
        UndoRequest,
        UndoResult,
    )
    from recon.domain.money import rupees
    from recon.domain.requests import UNDO
    from workflows import console, display
    from workflows.patches import GENERATION_PATCH, SIGNED_REQUESTS, WEB_UI_WORDS
    from workflows.policies import RETRY, WRITE_TIMEOUT
    from workflows.requests import checked_signer, refuse_without_mandate, started_by_its_night


@workflow.defn
class UndoReconciliation:
    def __init__(self) -> None:
        self._done: list[str] = []

    @workflow.query
    def steps_done(self) -> list[str]:
        return self._done

    @workflow.run
    async def run(self, req: UndoRequest) -> UndoResult:
        # Undos recorded before requests were signed replay without the check.
        if workflow.patched(SIGNED_REQUESTS) and not started_by_its_night(req.run_workflow_id):
            approver = await checked_signer(
                UNDO, run=req.run_workflow_id, supplier_id=req.supplier_id,
                references=req.references, reason=req.reason, by=req.by,
                signed_at=req.signed_at, signature=req.signature,
                heartbeat_seconds=req.heartbeat_seconds, passkey=req.passkey)
            req = req.model_copy(update={"by": approver})
        workflow.upsert_search_attributes([RECON_STATUS.value_set(RunStatus.UNDOING.value)])
        counts: dict[str, Reversed] = {}
        try:
            if workflow.patched(GENERATION_PATCH):  # undos recorded before it raised no generation
                await workflow.execute_activity_method(
                    UndoActivities.open_next_generation,
                    GenerationRequest(run_workflow_id=req.run_workflow_id,
                                      raised_by=workflow.info().run_id),
                    start_to_close_timeout=WRITE_TIMEOUT,
                    heartbeat_timeout=timedelta(seconds=req.heartbeat_seconds),
                    retry_policy=RETRY,
                )
            for step in (UndoActivities.withdraw_debit_notes,
                         UndoActivities.reverse_stock_movements,
                         UndoActivities.reverse_ledger_entries):
                name = step.__name__
                workflow.upsert_search_attributes([RECON_STEP.value_set(name)])
                counts[name] = await workflow.execute_activity_method(
                    step, req,
                    start_to_close_timeout=WRITE_TIMEOUT,
                    heartbeat_timeout=timedelta(seconds=req.heartbeat_seconds),
                    retry_policy=RETRY,
                )
                self._done.append(name)
        except ActivityError as err:
            # No verified undo of this night on record (recon/store/mandates.py): refused.
            refuse_without_mandate(err)
            raise
        workflow.upsert_search_attributes([RECON_STATUS.value_set(RunStatus.UNDONE.value)])
        result = UndoResult(
            undo_workflow_id=workflow.info().workflow_id,
            withdrawals=counts["withdraw_debit_notes"].count,
            stock_reversals=counts["reverse_stock_movements"].count,
            ledger_reversals=counts["reverse_ledger_entries"].count,
            reversed_paise=counts["reverse_ledger_entries"].paise,
        )
        # Its page says what was undone in words and ₹ (current details, memo, result).
        # No command for the details; the memo is one, so undos recorded before replay without.
        if workflow.patched(WEB_UI_WORDS):
            result.in_words = console.undo_in_words(req.run_workflow_id, req.scope, result)
            workflow.set_current_details(f"**{result.in_words}**")
            workflow.upsert_memo({"headline": {
                "undone": result.in_words, "night": req.run_workflow_id, "scope": req.scope,
                "reversed": rupees(result.reversed_paise), "by": req.by}})
        return result


async def undo_whole_run(req: RunRequest, night: str, decision: RecordedDecision,
                         progress: Progress) -> RunSummary:
    """A person decided the run must go: compensate everything it did (for a redo of one
    supplier: that supplier), as a child workflow with the same id `recon undo` would use,
    so the two can never both run. Called by NightlyReconciliation from its workflow code."""
    progress.current_step = "undo"
    display.set_status(progress, RunStatus.UNDOING)
    request = UndoRequest(
        run_workflow_id=night, supplier_id=req.redo_supplier,
        reason=decision.note or f"handover #{decision.handover_no}: undo",
        by=decision.by, heartbeat_seconds=req.heartbeat_seconds,
    )
    # Newer undos say whose they are and carry the night's warehouse and date, so the Web UI
    # lists them beside it, as an undo started by `recon undo` (recon/domain/labels.py).
    labels = (undo_start_options(night, request.scope, decision.by, request.reason,
                                 workflow.info().namespace, req.warehouse, req.business_date)
              if workflow.patched(WEB_UI_WORDS) else {})
    await workflow.execute_child_workflow(
        UndoReconciliation.run, request,
        id=undo_workflow_id(request.run_workflow_id, request.supplier_id, request.references),
        **labels,
    )
    display.set_status(progress, RunStatus.UNDONE)
    progress.current_step = None
    scope = f"supplier {req.redo_supplier}" if req.redo_supplier else "the whole night"
    words = display.show_finished(RunStatus.UNDONE, progress, None, undone=scope)
    return RunSummary(
        workflow_id=night, status=RunStatus.UNDONE.value, invoices=progress.invoices,
        parked=progress.parked, mismatches=progress.mismatches, ledger_posted=0,
        adjustment_total_paise=0, stock_movements=0, debit_notes=0, in_words=words,
    )
