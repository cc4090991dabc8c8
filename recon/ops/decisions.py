"""People decide: `recon approve` sends a signed decision, `recon handover` shows the record.

The decision names the handover it answers and travels as a Temporal Update. The workflow's
validator refuses anything but a well-formed answer to the pending handover; its handler then
has the signature, the approver's limit, four eyes and the park list checked in Postgres
(activities/decisions.py) before it acts, the same for every client: this command, the Web UI,
or a bare `temporal workflow update execute`.
"""

from __future__ import annotations

import asyncpg
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from recon.domain.errors import DecisionRefused
from recon.domain.models import Decision
from recon.domain.printable import printable
from recon.domain.requests import WHAT
from recon.store import handovers
from recon.store import requests as request_store
from recon.store.decisions import refusals_of


async def park_refs(pool: asyncpg.Pool, workflow_id: str, names: list[str]) -> list[str]:
    """`--park INV-7001` names the invoice by the supplier's number; the decision carries the
    run's reference (`S001:INV-7001`). A reference, or a number of a night posted before
    references, is taken as it is; a number two suppliers sent is refused naming both; a name
    the run does not hold is left for the decision's check to refuse."""
    from recon.store.invoices import refs_named

    found = await refs_named(pool, workflow_id, names)
    out = []
    for name in names:
        refs = found.get(name, [])
        if name in refs or not refs:
            out.append(name)
        elif len(refs) == 1:
            out.append(refs[0])
        else:
            raise DecisionRefused(f"--park {name!r}: {len(refs)} suppliers sent that number in "
                                  f"{workflow_id} ({', '.join(refs)}); name one of them")
    return out


async def send_decision(client: Client, workflow_id: str, decision: Decision) -> str:
    handle = client.get_workflow_handle(workflow_id)
    try:
        return await handle.execute_update("decide", decision, result_type=str)
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise DecisionRefused(f"refused: {getattr(cause, 'message', None) or cause}") from None
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise DecisionRefused(f"no running run {workflow_id!r}: nothing to decide") from None
        raise DecisionRefused(f"refused: {exc.message}") from None


async def handover_record(client: Client, pool: asyncpg.Pool, workflow_id: str) -> list[str]:
    """Lines for `recon handover RUN`: the pending note in full, then every handover with its
    decision (who, what, which, when), then decisions that were refused or ignored. Every line
    is built from data (names, notes, errors), so each is made printable: control characters
    are shown escaped, never sent to the terminal."""
    rows = await handovers.of_run(pool, workflow_id)
    memo, after = await _memo_and_after(client, workflow_id)
    ignored = memo.get("ignored_decisions") or []
    ignored = ignored if isinstance(ignored, list) else []
    refused = await refusals_of(pool, workflow_id)
    from recon.store.bounces import handovers_of

    mail_rows = await handovers_of(pool, workflow_id)
    requests = await request_store.refusals_of(pool, workflow_id)  # undo, redo, mail answers
    if not rows and not ignored and not mail_rows and not refused and not requests:
        raise DecisionRefused(f"run {workflow_id} has no handover")
    lines: list[str] = []
    for m in mail_rows:  # a refused debit note: answered with `recon mail resend|dismiss`
        lines.append(f"Delivery handover mail {m['id']}:")
        lines.append(printable(m["note"].rstrip(), keep_newlines=True))
        lines.append(printable(f"Decided: {m['decision']} by {m['decided_by']} at "
                               f"{m['decided_at']:%Y-%m-%d %H:%M:%S}") if m["decision"]
                     else "Status: waiting for a decision")
        lines.append("")
    pending = [r for r in rows if r["decision"] is None]
    if pending:
        lines.append(printable(pending[-1]["note"].rstrip(), keep_newlines=True))
        lines.append(f"Status: waiting for a decision on handover #{pending[-1]['handover_no']}")
        second = memo.get("awaiting_second_approver")
        if isinstance(second, dict):
            lines.append(printable(
                f"Four eyes: {second.get('decision')} by {second.get('by')} waits for a second, "
                f"different approver"))
    elif rows:
        # Decided: say so first, by whom and what the run did next; the note it answered (which
        # asked for a decision) follows as the record it was, not as the state of things.
        last = rows[-1]
        confirmed = f", confirmed by {last['confirmed_by']}" if last["confirmed_by"] else ""
        lines.append(printable(
            f"Handover #{last['handover_no']} ({last['step']}: {last['error_type']}) was decided: "
            f"{last['decision']} by {last['decided_by']}{confirmed} at "
            f"{last['decided_at']:%Y-%m-%d %H:%M:%S}"
            + (f" ({last['decision_note']})" if last["decision_note"] else "")))
        lines.append(printable(f"What happened next: {after}"))
        lines.append("Status: no handover is pending")
        lines.append("")
        lines.append(f"The note of handover #{last['handover_no']}, as it stood before the "
                     f"decision:")
        lines.extend("  " + line for line in printable(
            last["note"].rstrip(), keep_newlines=True).splitlines())
    if rows:
        lines.append("")
        lines.append("Handovers and decisions:")
    for r in rows:
        head = f"  #{r['handover_no']} {r['step']}: {r['error_type']} ({r['created_at']:%Y-%m-%d %H:%M:%S})"
        if r["decision"]:
            parked = (f"; parked {', '.join(r['parked_invoices'])}"
                      if r["parked_invoices"] else "")
            confirmed = f", confirmed by {r['confirmed_by']}" if r["confirmed_by"] else ""
            head += (f" -> {r['decision']} by {r['decided_by']}{confirmed} at "
                     f"{r['decided_at']:%Y-%m-%d %H:%M:%S}"
                     + (f" ({r['decision_note']})" if r["decision_note"] else "") + parked)
        else:
            head += " -> waiting"
        lines.append(printable(head))
    for f in refused:
        signer = "" if f["signer"] == f["tried_by"] else \
            f" (signed by {f['signer']})" if f["signer"] else " (no valid signature)"
        lines.append(printable(
            f"  refused: {f['decision']} by {f['tried_by']}{signer} for handover "
            f"#{f['handover_no']} via {f['via']} at {f['received_at']:%Y-%m-%d %H:%M:%S}: "
            f"{f['reason']}"))
    for f in requests:
        signer = "" if f["signer"] == f["tried_by"] else \
            f" (signed by {f['signer']})" if f["signer"] else " (no valid signature)"
        lines.append(printable(
            f"  refused: {WHAT.get(f['purpose'], f['purpose'])} by {f['tried_by']}{signer} "
            f"({f['target']}) at {f['received_at']:%Y-%m-%d %H:%M:%S}: {f['reason']}"))
    count = memo.get("ignored_count")
    if isinstance(count, int) and count > len(ignored):
        lines.append(f"  {count} decisions ignored; the last {len(ignored)}:")
    for i in ignored:
        if isinstance(i, dict):
            lines.append(printable(
                f"  ignored: {i.get('decision')} by {i.get('by')} for handover "
                f"#{i.get('handover_no')} at {i.get('received_at')}: {i.get('reason')}"))
    return lines


async def _memo(client: Client, workflow_id: str) -> dict:
    return (await _memo_and_after(client, workflow_id))[0]


async def _memo_and_after(client: Client, workflow_id: str) -> tuple[dict, str]:
    """The run's memo, and in words where the run stands now (after a decision): its business
    status (ReconStatus) and step, or how the workflow ended."""
    from temporalio.client import WorkflowExecutionStatus

    from recon.domain.labels import RECON_STATUS, RECON_STEP

    try:
        described = await client.get_workflow_handle(workflow_id).describe()
        memo = await described.memo()
    except RPCError:
        return {}, "the run is no longer on the Temporal server (its record is in Postgres)"
    memo = memo if isinstance(memo, dict) else {}
    status = described.typed_search_attributes.get(RECON_STATUS)
    step = described.typed_search_attributes.get(RECON_STEP)
    if described.status == WorkflowExecutionStatus.RUNNING:
        after = f"the run went on; it is {status or 'Running'}" + (f" at {step}" if step else "")
    elif described.status == WorkflowExecutionStatus.COMPLETED:
        after = f"the run went on and ended {status or 'Completed'}"
    else:
        state = described.status.name.lower().replace("_", " ") if described.status else "ended"
        after = f"the run ended: {state}"
    return memo, after
