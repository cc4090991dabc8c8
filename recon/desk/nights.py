"""What the desk's pages show, in words: a night's state and figures, from Postgres (figures,
handovers) and Temporal (whether a run completed). The desk process holds both clients; a page
never reaches either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import asyncpg
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from recon.domain.money import amounts
from recon.domain.steps import GATE
from recon.store import desk as store
from recon.store import handovers

LISTED = 200
STATES = ("held at the gate", "waiting for a decision", "running", "completed", "undone")


@dataclass(frozen=True)
class NightLine:
    workflow_id: str
    state: str  # in words: completed, waiting for a decision, held at the gate, undone, ...
    adjustments: str  # ₹ (and other currencies) in Indian grouping
    invoices: int
    suppliers: int
    claims: int
    parked: int
    pending_handover: int | None


def _totals(raw: object) -> dict[str, int]:
    value = json.loads(raw) if isinstance(raw, str) else raw
    return {k: int(v) for k, v in (value or {}).items()}


def state_words(row: asyncpg.Record, status: WorkflowExecutionStatus | None) -> str:
    if row["pending_handover"] is not None:
        return "held at the gate" if row["pending_step"] == GATE.name else "waiting for a decision"
    if row["generation"] and row["generation"] > 1:
        return "undone"
    if status is None:
        return "on record (not on the Temporal server)"
    if status == WorkflowExecutionStatus.COMPLETED:
        return "completed"
    if status == WorkflowExecutionStatus.RUNNING:
        return "running"
    return status.name.lower().replace("_", " ")


def _line(row: asyncpg.Record, status: WorkflowExecutionStatus | None) -> NightLine:
    return NightLine(
        workflow_id=row["workflow_id"], state=state_words(row, status),
        adjustments=amounts(_totals(row["adjustments"])), invoices=row["invoices"],
        suppliers=row["suppliers"], claims=row["claims"], parked=row["parked"],
        pending_handover=row["pending_handover"])


async def _statuses(client: Client) -> dict[str, WorkflowExecutionStatus | None]:
    out: dict[str, WorkflowExecutionStatus | None] = {}
    try:
        async for wf in client.list_workflows("WorkflowType = 'NightlyReconciliation'",
                                              limit=LISTED * 2):
            out.setdefault(wf.id, wf.status)
    except RPCError:
        pass  # the figures are Postgres's; only "completed" needs Temporal
    return out


async def listed(pool: asyncpg.Pool, client: Client) -> list[NightLine]:
    rows = await store.nights(pool, LISTED)
    statuses = await _statuses(client)
    return [_line(r, statuses.get(r["workflow_id"])) for r in rows]


async def _status(client: Client, workflow_id: str) -> WorkflowExecutionStatus | None:
    try:
        return (await client.get_workflow_handle(workflow_id).describe()).status
    except RPCError:
        return None


async def night(pool: asyncpg.Pool, client: Client, workflow_id: str) -> dict | None:
    row = await store.night(pool, workflow_id)
    if row is None:
        return None
    return {
        "line": _line(row, await _status(client, workflow_id)),
        "invoices": await store.invoices_of(pool, workflow_id),
        "parked": await store.parked_of(pool, workflow_id),
        "ledger": await store.ledger_of(pool, workflow_id),
        "handovers": await handovers.of_run(pool, workflow_id),
    }
