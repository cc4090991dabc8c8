"""`recon undo`: check the request against what the run really did, then start the undo workflow.

A run that is still going is refused (docs/architecture.md: "undo of an unfinished run is
refused"): its handover's `--decision undo` is the way to undo a run that is waiting, and the
forward run then runs the same undo workflow itself, so the two can never both run.

The request is signed (recon.ops.requests.signed_request); the undo workflow checks the signature
before it reverses anything, and a refused request fails it in one line: that line is what
`recon undo` prints.
"""

from __future__ import annotations

import asyncpg
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from recon.domain.errors import UndoRefused, UnknownRun
from recon.domain.keys import REDO_WORKFLOW_PREFIX, companions_of
from recon.domain.models import UndoRequest, UndoResult
from recon.domain.money import amount, amounts
from recon.domain.requests import SignedRequest
from recon.runtime.config import Settings
from recon.store.inspection import (
    forward_references,
    rows_written,
    supplier_exists,
    supplier_posted,
)
from recon.store.undo import Scope, UndoPlan, plan_undo, reversed_by_currency


async def _checked_plan(
    client: Client, pool: asyncpg.Pool, run: str, supplier: str | None, references: list[str]
) -> UndoPlan:
    try:
        description = await client.get_workflow_handle(run).describe()
        status = description.status
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        status = None
    wrote = await rows_written(pool, run)
    if status is None and not wrote:
        raise UnknownRun(f"no run {run!r}")
    if status == WorkflowExecutionStatus.RUNNING:
        raise UndoRefused(
            f"run {run} is still going: undo refuses to act behind its back; wait for it to "
            f"finish, or answer its handover with `recon approve {run} --decision undo`"
        )
    async for redo in client.list_workflows(
        companions_of(run, REDO_WORKFLOW_PREFIX), limit=1
    ):
        raise UndoRefused(f"redo {redo.id} of this night is still going: answer or wait for it "
                          f"(`recon status {redo.id}`), then undo")
    if supplier is not None:
        if not await supplier_exists(pool, supplier):
            raise UndoRefused(f"unknown supplier {supplier!r}")
        if not await supplier_posted(pool, run, supplier):
            raise UndoRefused(f"run {run} posted nothing for supplier {supplier}")
    if references:
        known = await forward_references(pool, run, references)
        missing = [r for r in references if r not in known]
        if missing:
            raise UndoRefused(f"run {run} has no ledger entry {missing[0]!r}")
    plan = await plan_undo(pool, Scope(run, supplier, tuple(references)))
    if plan.empty:
        raise UndoRefused(f"nothing to undo in {run}"
                          + (f" for supplier {supplier}" if supplier else "")
                          + ": everything in scope is already reversed")
    return plan


def _plan_lines(plan: UndoPlan) -> list[str]:
    stock_units = sum(m["qty"] for m in plan.stock)
    lines = [
        f"ledger: {len(plan.ledger)} reversal entries, "
        f"{amounts({c: -v for c, v in plan.ledger_by_currency.items()})} "
        f"(reversing {amounts(plan.ledger_by_currency)})",
        f"stock: {len(plan.stock)} opposite movements, {-stock_units} units in all",
        f"notes: {len(plan.notes)} withdrawal notes"
        + (f" ({', '.join(n['key'] for n in plan.notes[:5])}"
           + (", ..." if len(plan.notes) > 5 else "") + ")" if plan.notes else ""),
    ]
    for r in plan.ledger[:10]:
        lines.append(f"  reverse {r['reference']}  {amount(r['amount_paise'], r['currency'])}")
    if len(plan.ledger) > 10:
        lines.append(f"  ... and {len(plan.ledger) - 10} more")
    return lines


async def describe_plan(
    client: Client, pool: asyncpg.Pool, run: str, supplier: str | None, references: list[str]
) -> list[str]:
    plan = await _checked_plan(client, pool, run, supplier, references)
    return ["dry run: nothing will be changed", *_plan_lines(plan)]


async def _night_labels(client: Client, run: str) -> dict[str, str]:
    """The night's warehouse and date as its own run carries them (none for a run the server
    no longer holds): the undo carries them too, so the Web UI lists it beside the night."""
    from recon.domain.labels import RECON_DATE, RECON_WAREHOUSE

    try:
        attributes = (await client.get_workflow_handle(run).describe()).typed_search_attributes
    except RPCError:
        return {}
    warehouse, day = attributes.get(RECON_WAREHOUSE), attributes.get(RECON_DATE)
    return {"warehouse": warehouse, "business_date": day} if warehouse and day else {}


async def start_undo(
    client: Client, pool: asyncpg.Pool, settings: Settings, run: str, supplier: str | None,
    references: list[str], reason: str, signed: SignedRequest,
) -> list[str]:
    from recon.domain.labels import undo_start_options
    from workflows.undo import UndoReconciliation

    await _checked_plan(client, pool, run, supplier, references)
    request = UndoRequest(run_workflow_id=run, supplier_id=supplier, references=references,
                          reason=reason, by=signed.by, signed_at=signed.signed_at,
                          signature=signed.signature, passkey=signed.passkey,
                          heartbeat_seconds=settings.heartbeat_seconds)
    undo_id = request.workflow_id()
    try:
        handle = await client.start_workflow(
            UndoReconciliation.run, request, id=undo_id, task_queue=settings.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            **undo_start_options(run, request.scope, signed.by, reason,
                                 settings.temporal_namespace, **await _night_labels(client, run)),
        )
    except WorkflowAlreadyStartedError:
        raise UndoRefused(f"undo {undo_id} already ran") from None
    try:
        result: UndoResult = await handle.result()
    except WorkflowFailureError as exc:
        raise UndoRefused(f"undo {undo_id} refused: {exc.cause}") from None
    reversed_sums = await reversed_by_currency(pool, Scope(run, supplier, tuple(references)))
    return [
        f"undo {result.undo_workflow_id} finished ({request.scope}):",
        f"  {result.ledger_reversals} ledger reversals ({amounts(reversed_sums)} reversed), "
        f"{result.stock_reversals} opposite stock movements, {result.withdrawals} withdrawal notes",
    ]
