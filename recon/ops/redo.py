"""`recon redo`: post an undone night (or one supplier of it) again, exactly once.

The undo moved the night to a new generation, so the redo posts under keys no undone entry
holds. The redo is the nightly workflow itself, started under its own id with `redo_of` set:
steps 1-6 are already in Postgres under the night's id, so it runs steps 7-10 for the scope,
with the same gate, verification and handovers. Its id carries the scope and the generation,
so two `recon redo` at once attach to one workflow. The request is signed; the workflow checks
the signature before it posts anything (a refusal fails the redo in one line).
"""

from __future__ import annotations

import asyncpg
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from recon.domain.errors import RedoRefused, UnknownRun
from recon.domain.keys import UNDO_WORKFLOW_PREFIX, companions_of, night_of, redo_workflow_id
from recon.domain.requests import SignedRequest
from recon.runtime.config import Settings
from recon.store.undo import supplier_in_night, to_redo


async def _run_status(client: Client, run: str) -> WorkflowExecutionStatus | None:
    try:
        return (await client.get_workflow_handle(run).describe()).status
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        return None


async def _undo_running(client: Client, run: str) -> str | None:
    query = companions_of(run, UNDO_WORKFLOW_PREFIX)
    async for wf in client.list_workflows(query, limit=1):
        return wf.id
    return None


async def plan_redo(
    client: Client, pool: asyncpg.Pool, run: str, supplier: str | None
) -> tuple[int, int, int]:
    """(ledger entries, stock movements, generation) the redo would post; refuses in one line."""
    if night_of(run) is None:
        raise RedoRefused(f"{run!r} is not a night's run id (recon-YYYY-MM-DD-warehouse)")
    status = await _run_status(client, run)
    counts = await to_redo(pool, run, supplier)
    if status is None and not counts["flagged"] and not counts["compared"]:
        raise UnknownRun(f"no run {run!r}")
    if status == WorkflowExecutionStatus.RUNNING:
        raise RedoRefused(f"run {run} is still going: a redo is for a finished night that was "
                          "undone; answer its handover instead")
    if supplier is not None and not await supplier_in_night(pool, run, supplier):
        raise RedoRefused(f"run {run} has nothing of supplier {supplier!r} to redo")
    undoing = await _undo_running(client, run)
    if undoing:
        raise RedoRefused(f"undo {undoing} is still running: wait for it to finish, then redo")
    if not counts["ledger"] and not counts["stock"]:
        raise RedoRefused(
            f"nothing to redo in {run}" + (f" for supplier {supplier}" if supplier else "")
            + ": every entry and stock movement is live (a redo follows an undo)"
        )
    return int(counts["ledger"]), int(counts["stock"]), int(counts["generation"])


async def start_redo(
    client: Client, pool: asyncpg.Pool, settings: Settings, run: str, supplier: str | None,
    reason: str, signed: SignedRequest,
):
    """Start (or attach to) the redo workflow; returns its handle and what it will post."""
    from starter import run_request
    from workflows.nightly import NightlyReconciliation

    ledger, stock, generation = await plan_redo(client, pool, run, supplier)
    night = night_of(run)
    assert night is not None  # plan_redo refused any other shape
    request = run_request(settings, *night).model_copy(update={
        "redo_of": run, "redo_supplier": supplier, "redo_reason": reason, "redo_by": signed.by,
        "redo_signed_at": signed.signed_at, "redo_signature": signed.signature,
        "redo_passkey": signed.passkey,
    })
    handle = await client.start_workflow(
        NightlyReconciliation.run, request,
        id=redo_workflow_id(run, supplier, generation), task_queue=settings.task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        memo={"redo_of": run, "supplier": supplier, "reason": reason, "by": signed.by},
    )
    return handle, ledger, stock, generation
