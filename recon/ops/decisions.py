"""People decide: `recon approve` sends a decision, `recon handover` shows the record.

The decision names the handover it answers and travels as a Temporal Update, whose validator
(in the workflow) refuses anything but an answer to the pending handover. Parking named invoices
is checked here first against Postgres, since the validator cannot read it: an invoice that is
not in the night, or already has live entries, cannot be left out consistently.
"""

from __future__ import annotations

import asyncpg
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from recon.domain.errors import DecisionRefused
from recon.domain.keys import REDO_WORKFLOW_PREFIX
from recon.store import handovers
from recon.store.inspection import live_rows_of_invoice
from recon.store.invoices import in_run


async def _night_of(client: Client, workflow_id: str) -> str:
    """A redo writes under its night's id (kept in its memo); every other run under its own."""
    if not workflow_id.startswith(REDO_WORKFLOW_PREFIX):
        return workflow_id
    try:
        memo = await (await client.get_workflow_handle(workflow_id).describe()).memo()
    except RPCError:
        return workflow_id
    return str(memo.get("redo_of") or workflow_id)


async def _check_park(pool: asyncpg.Pool, night: str, invoices: list[str]) -> None:
    for invoice in invoices:
        if not await in_run(pool, night, invoice):
            raise DecisionRefused(f"--park {invoice!r}: no such invoice in {night}")
        live = await live_rows_of_invoice(pool, night, invoice)
        if live:
            raise DecisionRefused(
                f"--park {invoice!r}: it already has {live} live ledger or stock entries; "
                "parking it now would leave the run inconsistent"
            )


async def send_decision(
    client: Client, pool: asyncpg.Pool, workflow_id: str, handover_no: int, decision: str,
    by: str, note: str, park: list[str],
) -> str:
    from recon.domain.models import Decision

    if park:
        await _check_park(pool, await _night_of(client, workflow_id), park)
    handle = client.get_workflow_handle(workflow_id)
    try:
        return await handle.execute_update(
            "decide",
            Decision(decision=decision, by=by, note=note, handover_no=handover_no,
                     park=sorted(set(park))),
            result_type=str,
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise DecisionRefused(f"refused: {getattr(cause, 'message', None) or cause}") from None
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise DecisionRefused(f"no running run {workflow_id!r}: nothing to decide") from None
        raise DecisionRefused(f"refused: {exc.message}") from None


async def handover_record(client: Client, pool: asyncpg.Pool, workflow_id: str) -> list[str]:
    """Lines for `recon handover RUN`: the pending note in full, then every handover with its
    decision (who, what, which, when), then decisions that reached the run and were ignored."""
    rows = await handovers.of_run(pool, workflow_id)
    ignored = await _ignored(client, workflow_id)
    from recon.store.mail_handovers import handovers_of

    mail_rows = await handovers_of(pool, workflow_id)
    if not rows and not ignored and not mail_rows:
        raise DecisionRefused(f"run {workflow_id} has no handover")
    lines: list[str] = []
    for m in mail_rows:  # a refused debit note: answered with `recon mail resend|dismiss`
        lines.append(f"Delivery handover mail {m['id']}:")
        lines.append(m["note"].rstrip())
        lines.append(f"Decided: {m['decision']} by {m['decided_by']} at "
                     f"{m['decided_at']:%Y-%m-%d %H:%M:%S}" if m["decision"]
                     else "Status: waiting for a decision")
        lines.append("")
    pending = [r for r in rows if r["decision"] is None]
    if pending:
        lines.append(pending[-1]["note"].rstrip())
        lines.append(f"Status: waiting for a decision on handover #{pending[-1]['handover_no']}")
    elif rows:
        lines.append(rows[-1]["note"].rstrip())
        lines.append("Status: no handover is pending")
    if rows:
        lines.append("")
        lines.append("Handovers and decisions:")
    for r in rows:
        head = f"  #{r['handover_no']} {r['step']}: {r['error_type']} ({r['created_at']:%Y-%m-%d %H:%M:%S})"
        if r["decision"]:
            parked = (f"; parked {', '.join(r['parked_invoices'])}"
                      if r["parked_invoices"] else "")
            head += (f" -> {r['decision']} by {r['decided_by']} at {r['decided_at']:%Y-%m-%d %H:%M:%S}"
                     + (f" ({r['decision_note']})" if r["decision_note"] else "") + parked)
        else:
            head += " -> waiting"
        lines.append(head)
    for i in ignored:
        lines.append(f"  ignored: {i.get('decision')} by {i.get('by')} for handover "
                     f"#{i.get('handover_no')} at {i.get('received_at')}: {i.get('reason')}")
    return lines


async def _ignored(client: Client, workflow_id: str) -> list[dict]:
    try:
        memo = await (await client.get_workflow_handle(workflow_id).describe()).memo()
    except RPCError:
        return []
    value = memo.get("ignored_decisions") or []
    return value if isinstance(value, list) else []
