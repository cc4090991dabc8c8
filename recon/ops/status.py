"""`recon status ID`: where a run stands, for every workflow the product starts.

Nothing here needs a worker. Temporal gives the execution status, the business status (search
attribute ReconStatus: Running, AwaitingDecision, Undoing, Undone, Completed), the current step
(ReconStep) and, from the event history, the steps done. The counts come from Postgres, because
the ledger is the truth: a run's own progress counters say what it meant to post, not what is live
after an undo, and a finished run has no worker left to answer a query.

An id of an undo or redo workflow (`undo-recon-…`, `undo-recon-…-supplier-S`, `undo-recon-…-refs-…`,
`redo-recon-…`) is reported as the run it belongs to, plus that workflow's own status.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import asyncpg
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from recon.domain.errors import UnknownRun
from recon.domain.keys import REDO_WORKFLOW_PREFIX, UNDO_WORKFLOW_PREFIX, undo_workflow_id
from recon.domain.labels import RECON_STATUS, RECON_STEP, RunStatus
from recon.domain.money import amounts
from recon.domain.wording import count
from recon.ops.history import read_history
from recon.store.inspection import ledger_net_by_currency, run_wrote, status_counts

# workflows that act on a run, named after it
COMPANION_PREFIXES = (UNDO_WORKFLOW_PREFIX, REDO_WORKFLOW_PREFIX)
# Activities a person reads as steps; the rest (handover records, gate checks) are bookkeeping.
# Activities that are not steps of the night: a handover, a decision or request being checked.
_BOOKKEEPING = {"record_handover", "record_decision", "send_reminder", "check_evidence",
                "check_decision", "check_signed_request", "park_invoices"}



@dataclass
class WorkflowState:
    """One workflow as Temporal knows it (None fields: not in Temporal)."""

    workflow_id: str
    execution: str | None = None  # running, completed, failed, terminated, ...
    business: str | None = None  # ReconStatus
    current_step: str | None = None  # ReconStep, while running
    steps_done: list[str] = field(default_factory=list)

    @property
    def known(self) -> bool:
        return self.execution is not None


@dataclass
class StatusReport:
    asked: str
    run: WorkflowState
    companion: WorkflowState | None  # the undo/redo workflow asked about, if that is what it was
    counts: dict[str, int]
    # every entry's net per currency, in its minor unit (reversals included, as `net` always was)
    nets: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out: list[str] = []
        if self.companion is not None:
            out += _state_lines(self.companion, "")
            out.append(f"for run {self.run.workflow_id}:")
            out += ["  " + line for line in self._run_lines()]
        else:
            out += self._run_lines()
        return out

    def _run_lines(self) -> list[str]:
        c = self.counts
        state = _state_lines(self.run, "")
        if c["ledger_reversals"] and self.run.execution == "completed":
            # The run finished; an undo reversed what it posted since: say so on its own line,
            # never "completed ... net ₹0" as if the night had posted nothing.
            state[0] += (", then undone: every entry reversed" if not c["ledger_live"] else
                         f", then partly undone: {count(c['ledger_reversals'], 'entry')} "
                         "reversed")
        return [
            *state,
            f"invoices {c['invoices']}, parked {c['parked']}, mismatches {c['mismatches']}",
            f"ledger: {c['ledger_live']} live entries, {c['ledger_reversals']} reversals, "
            f"net {amounts(self.nets or {'INR': c['ledger_net_paise']})}",
            f"stock movements: {c['stock_live']} live, {c['stock_reversals']} opposite",
            f"debit notes: {c['debit_notes']}, withdrawals {c['withdrawals']}",
            f"handovers: {c['handovers_pending']} pending of {c['handovers']}",
            *([f"awaiting receipt: {count(c['awaiting_receipt'], 'line')} held (billed ahead of "
               "their goods; weighed again each night until their window closes): recon inspect "
               f"{self.run.workflow_id} --json"] if c["awaiting_receipt"] else []),
            *([f"possible duplicates: {count(c['possible_duplicates'], 'bill')} "
               f"{'repeats' if c['possible_duplicates'] == 1 else 'repeat'} an earlier bill"]
              if c["possible_duplicates"] else []),
        ]


def _state_lines(state: WorkflowState, indent: str) -> list[str]:
    if not state.known:
        return [f"{indent}{state.workflow_id}: not in Temporal (its history is gone, e.g. the dev "
                "server was restarted); the counts below come from the ledger"]
    head = f"{indent}{state.workflow_id}: {state.execution}"
    head += f" ({state.business})" if state.business else ""
    lines = [head]
    if state.execution == "running":
        lines.append(f"{indent}current step: {state.current_step or '-'}")
    lines.append(f"{indent}steps done: {', '.join(state.steps_done) or '-'}")
    return lines


async def _describe(client: Client, workflow_id: str) -> tuple[WorkflowHandle,
                                                               WorkflowExecutionDescription | None]:
    handle = client.get_workflow_handle(workflow_id)
    try:
        return handle, await handle.describe()
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        return handle, None


async def _state(client: Client, workflow_id: str) -> tuple[WorkflowState, WorkflowHandle | None]:
    handle, description = await _describe(client, workflow_id)
    state = WorkflowState(workflow_id)
    if description is None:
        return state, None
    attributes = description.typed_search_attributes
    state.execution = description.status.name.lower() if description.status else "unknown"
    state.business = attributes.get(RECON_STATUS)
    state.current_step = attributes.get(RECON_STEP) if state.execution == "running" else None
    history = await read_history(handle)
    state.steps_done = [name for name, step in history.steps.items()
                        if step.completed and name not in _BOOKKEEPING]
    return state, handle


async def _run_named_in_input(client: Client, handle: WorkflowHandle) -> str | None:
    """The run an undo (or redo) acts on, as its start input names it."""
    async for event in handle.fetch_history_events():
        payloads = event.workflow_execution_started_event_attributes.input.payloads
        if not payloads:
            return None
        try:  # through the client's converter: the input may be encrypted
            data = (await client.data_converter.decode(payloads[:1]))[0]
        except (ValueError, LookupError):
            return None
        if isinstance(data, dict):
            for key in ("run_workflow_id", "workflow_id", "run"):
                if isinstance(data.get(key), str) and data[key].startswith("recon-"):
                    return data[key]
        return None
    return None


async def _run_from_id(client: Client, pool: asyncpg.Pool, rest: str) -> str:
    """Without a readable input: the longest `recon-…` prefix of the id that is a run we know
    (a warehouse code may itself contain '-', so the suffix cannot simply be cut off)."""
    parts = rest.split("-")
    for end in range(len(parts), 4, -1):
        candidate = "-".join(parts[:end])
        if (await _describe(client, candidate))[1] is not None or await run_wrote(pool,
                                                                                  candidate):
            return candidate
    return "-".join(parts[:5])


async def run_status(client: Client, pool: asyncpg.Pool, workflow_id: str) -> StatusReport:
    companion: WorkflowState | None = None
    run_id = workflow_id
    if workflow_id.startswith(COMPANION_PREFIXES):
        companion, handle = await _state(client, workflow_id)
        named = await _run_named_in_input(client, handle) if handle is not None else None
        run_id = named or await _run_from_id(client, pool, workflow_id[len(UNDO_WORKFLOW_PREFIX):])
    run, _handle = await _state(client, run_id)
    if run.execution == "running" and run.business == RunStatus.UNDOING:
        # A person decided "undo": the run waits on its undo child, whose step is the news.
        child_id = undo_workflow_id(run_id)
        child, _ = await _state(client, child_id)
        if child.known:
            run.current_step = f"undo, {child.current_step or 'starting'} ({child_id})"
    counts = await status_counts(pool, run_id)
    if not run.known and (companion is None or not companion.known) and not (
        counts["invoices"] or counts["ledger_live"] or counts["ledger_reversals"]
    ):
        raise UnknownRun(f"no run {workflow_id!r} in Temporal or in the ledger: check the id "
                         "with `recon handovers` or the Web UI")
    return StatusReport(workflow_id, run, companion, counts,
                        await ledger_net_by_currency(pool, run_id))


async def night_label(client: Client, workflow_id: str) -> str:
    """A night's state in a word or two, for a refusal line: "Completed", "Undone", "Running
    (match_orders)", "waiting for a person"; "started" when Temporal does not know the run."""
    _handle, description = await _describe(client, workflow_id)
    if description is None:
        return "started"
    business = description.typed_search_attributes.get(RECON_STATUS)
    running = description.status is None or description.status.name == "RUNNING"
    if running and business == RunStatus.AWAITING_DECISION:
        return "waiting for a person"
    if running:
        step = description.typed_search_attributes.get(RECON_STEP)
        return f"Running ({step})" if step else "Running"
    if business and business not in (RunStatus.RUNNING, RunStatus.AWAITING_DECISION):
        return business  # Completed, Undone, Undoing
    return description.status.name.capitalize()  # Failed, Terminated, ...
