"""The handover: when the run cannot decide, it writes down the evidence and asks a person.

The note is stored in Postgres (shown by `recon handover`), queued to the finance head through
the outbox, and kept small enough to live in the run's memo for the Web UI.
"""

from __future__ import annotations

import json
from datetime import datetime

from temporalio import activity

from activities import resources
from activities.step import business_step
from recon.errors import VerificationFailed
from recon.ledger import verify_adjustments
from recon.models import (
    GateInput,
    GateVerdict,
    HandoverNote,
    HandoverRequest,
    RecordedDecision,
    ReminderRequest,
)
from recon.money import rupees
from recon.outbox import Message, enqueue
from recon.stock import verify_movements

KEYS_SHOWN = 5


async def _what_was_posted(conn, workflow_id: str) -> dict:
    ledger = await conn.fetchrow(
        "SELECT count(*) AS n, coalesce(sum(amount_paise), 0) AS total,"
        " (array_agg(reference ORDER BY posted_at, reference))[1:$2] AS first_keys,"
        " max(reference) FILTER (WHERE posted_at = (SELECT max(posted_at) FROM ledger_entries"
        "   WHERE workflow_id = $1)) AS last_key"
        " FROM ledger_entries WHERE workflow_id = $1",
        workflow_id, KEYS_SHOWN,
    )
    flagged = await conn.fetchrow(
        "SELECT count(*) AS n, coalesce(sum(amount_paise), 0) AS total"
        " FROM mismatches WHERE workflow_id = $1",
        workflow_id,
    )
    stock = await conn.fetchval(
        "SELECT count(*) FROM stock_movements WHERE workflow_id = $1", workflow_id
    )
    outbox = await conn.fetch(
        "SELECT kind, count(*) AS n FROM outbox WHERE workflow_id = $1 GROUP BY kind", workflow_id
    )
    parked = await conn.fetchval(
        "SELECT count(*) FROM parked_items WHERE workflow_id = $1", workflow_id
    )
    return {
        "ledger_entries": ledger["n"],
        "ledger_total_paise": int(ledger["total"]),
        "ledger_first_keys": list(ledger["first_keys"] or []),
        "ledger_last_key": ledger["last_key"],
        "flagged": flagged["n"],
        "flagged_total_paise": int(flagged["total"]),
        "stock_movements": stock,
        "outbox": {r["kind"]: r["n"] for r in outbox},
        "parked": parked,
    }


def _note_text(req: HandoverRequest, posted: dict) -> str:
    keys = ", ".join(posted["ledger_first_keys"]) or "none"
    outbox = ", ".join(f"{n} {kind}" for kind, n in sorted(posted["outbox"].items())) or "none"
    return (
        f"Run {req.workflow_id} needs a decision (handover #{req.handover_no}).\n"
        f"Failed step: {req.step}\n"
        f"Error: {req.error_type}: {req.error_message}\n"
        f"Attempts: {req.attempts}\n"
        f"Already posted: {posted['ledger_entries']} of {posted['flagged']} ledger entries, "
        f"{rupees(posted['ledger_total_paise'])} of {rupees(posted['flagged_total_paise'])}; "
        f"{posted['stock_movements']} stock movements; outbox: {outbox}; "
        f"{posted['parked']} parked items.\n"
        f"First keys: {keys}" + (f"; last: {posted['ledger_last_key']}" if posted["ledger_last_key"]
                                 else "") + "\n"
        f"Next, the agent would: {req.next_action}\n"
        f"Decide with: recon approve {req.workflow_id} --decision resume|retry|undo --by NAME\n"
    )


@activity.defn(name="record_handover")
@business_step
async def record_handover(req: HandoverRequest) -> HandoverNote:
    pool = resources.pool()
    async with pool.acquire() as conn, conn.transaction():
        stored = await conn.fetchval(
            "SELECT note FROM handovers WHERE workflow_id = $1 AND handover_no = $2",
            req.workflow_id, req.handover_no,
        )
        if stored is None:
            posted = await _what_was_posted(conn, req.workflow_id)
            stored = _note_text(req, posted)
            await conn.execute(
                "INSERT INTO handovers (workflow_id, handover_no, step, error_type, error_message,"
                " attempts, posted, next_action, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                req.workflow_id, req.handover_no, req.step, req.error_type, req.error_message,
                req.attempts, json.dumps(posted), req.next_action, stored,
            )
        await enqueue(conn, Message(
            key=f"{req.workflow_id}:handover:{req.handover_no}", workflow_id=req.workflow_id,
            kind="handover", recipient=req.finance_head_email,
            subject=f"Decision needed: {req.workflow_id} stopped at {req.step}", body=stored,
        ))
    return HandoverNote(
        workflow_id=req.workflow_id, handover_no=req.handover_no, step=req.step,
        error_type=req.error_type, error_message=req.error_message[:2000],
        attempts=req.attempts, note=stored,
    )


@activity.defn(name="record_decision")
@business_step
async def record_decision(d: RecordedDecision) -> None:
    await resources.pool().execute(
        "UPDATE handovers SET decision = $3, decided_by = $4, decision_note = $5,"
        " decided_at = $6::timestamptz WHERE workflow_id = $1 AND handover_no = $2"
        " AND decision IS NULL",
        d.workflow_id, d.handover_no, d.decision, d.by, d.note,
        datetime.fromisoformat(d.decided_at),
    )


@activity.defn(name="send_reminder")
@business_step
async def send_reminder(req: ReminderRequest) -> None:
    pool = resources.pool()
    note = await pool.fetchval(
        "SELECT note FROM handovers WHERE workflow_id = $1 AND handover_no = $2",
        req.workflow_id, req.handover_no,
    )
    async with pool.acquire() as conn:
        await enqueue(conn, Message(
            key=f"{req.workflow_id}:handover:{req.handover_no}:reminder:{req.reminder_no}",
            workflow_id=req.workflow_id, kind="reminder", recipient=req.finance_head_email,
            subject=f"Reminder {req.reminder_no}: {req.workflow_id} still waits for a decision",
            body=note or "",
        ))


@activity.defn(name="check_evidence")
@business_step
async def check_evidence(gate: GateInput) -> GateVerdict:
    """The gate before debit notes: ledger and stock verified, parked share and total normal."""
    pool = resources.pool()
    reasons: list[str] = []
    for verify in (verify_adjustments, verify_movements):
        try:
            await verify(pool, gate.workflow_id)
        except VerificationFailed as exc:
            reasons.append(str(exc))
    row = await pool.fetchrow(
        "SELECT (SELECT count(*) FROM run_invoices WHERE workflow_id = $1) AS invoices,"
        " (SELECT count(*) FROM parked_items WHERE workflow_id = $1 AND line_no IS NULL) AS parked,"
        " (SELECT coalesce(sum(amount_paise), 0) FROM mismatches WHERE workflow_id = $1) AS total,"
        " (SELECT coalesce(sum(qty::bigint * unit_price_paise), 0) FROM invoice_lines"
        "   WHERE workflow_id = $1) AS invoiced",
        gate.workflow_id,
    )
    if row["invoices"] and row["parked"] / row["invoices"] > gate.max_parked_invoice_ratio:
        reasons.append(
            f"{row['parked']} of {row['invoices']} invoices parked, above the "
            f"{gate.max_parked_invoice_ratio:.0%} threshold"
        )
    if row["invoiced"] and row["total"] / row["invoiced"] > gate.max_adjustment_share:
        reasons.append(
            f"adjustments total {rupees(int(row['total']))}, "
            f"{row['total'] / row['invoiced']:.1%} of the {rupees(int(row['invoiced']))} invoiced, "
            f"above the {gate.max_adjustment_share:.0%} threshold"
        )
    if gate.max_adjustment_total_paise and row["total"] > gate.max_adjustment_total_paise:
        reasons.append(
            f"adjustments total {rupees(int(row['total']))}, above the "
            f"{rupees(gate.max_adjustment_total_paise)} threshold"
        )
    return GateVerdict(reasons=reasons)
