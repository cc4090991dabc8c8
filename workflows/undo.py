"""UndoReconciliation: a saga's compensations, as a workflow of its own.

Its id is derived from the run and the scope, so an undo interrupted by a crash resumes from its
own history and starting the same undo twice is the same workflow. Compensations run newest
first, so each starts from the state its own step left: withdrawal notes, stock, then ledger.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.undo import UndoActivities
    from recon.models import GenerationRequest, Reversed, UndoRequest, UndoResult
    from recon.run_labels import RECON_STATUS, RECON_STEP, RunStatus
    from workflows.policies import RETRY, WRITE_TIMEOUT

GENERATION_PATCH = "undo-opens-next-generation"



@workflow.defn
class UndoReconciliation:
    def __init__(self) -> None:
        self._done: list[str] = []

    @workflow.query
    def steps_done(self) -> list[str]:
        return self._done

    @workflow.run
    async def run(self, req: UndoRequest) -> UndoResult:
        workflow.upsert_search_attributes([RECON_STATUS.value_set(RunStatus.UNDOING.value)])
        counts: dict[str, Reversed] = {}
        if workflow.patched(GENERATION_PATCH):  # undos recorded before it raised no generation
            await workflow.execute_activity_method(
                UndoActivities.open_next_generation,
                GenerationRequest(run_workflow_id=req.run_workflow_id,
                                  raised_by=workflow.info().run_id),
                start_to_close_timeout=WRITE_TIMEOUT,
                heartbeat_timeout=timedelta(seconds=req.heartbeat_seconds),
                retry_policy=RETRY,
            )
        for step in (UndoActivities.withdraw_debit_notes, UndoActivities.reverse_stock_movements,
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
        workflow.upsert_search_attributes([RECON_STATUS.value_set(RunStatus.UNDONE.value)])
        return UndoResult(
            undo_workflow_id=workflow.info().workflow_id,
            withdrawals=counts["withdraw_debit_notes"].count,
            stock_reversals=counts["reverse_stock_movements"].count,
            ledger_reversals=counts["reverse_ledger_entries"].count,
            reversed_paise=counts["reverse_ledger_entries"].paise,
        )
