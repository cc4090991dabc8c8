"""The handover: when the run cannot decide, it writes down the evidence and asks a person.

The note is stored in Postgres (shown by `recon handover`), queued to the finance head through
the outbox, and kept small enough to live in the run's memo for the Web UI.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime

from temporalio import activity

from activities.resources import Room
from activities.step import business_step
from recon.domain import steps
from recon.domain.errors import VerificationFailed
from recon.domain.gate_policy import GatePolicy, reasons_to_hold
from recon.domain.keys import handover_key, reminder_key
from recon.domain.models import (
    GateInput,
    GateVerdict,
    HandoverNote,
    HandoverRequest,
    ParkRequest,
    RecordedDecision,
    ReminderRequest,
)
from recon.domain.money import amount, amounts
from recon.domain.redaction import mask_known
from recon.domain.wording import count
from recon.store import gate as gate_store
from recon.store import handovers
from recon.store.generations import current_generation
from recon.store.ledger import verify_adjustments
from recon.store.mandates import Parking, record_gate
from recon.store.outbox import Message, enqueue
from recon.store.parking import park
from recon.store.stock import verify_movements


def _note_text(req: HandoverRequest, posted: dict) -> str:
    run = req.posted_for or req.workflow_id
    outbox = ", ".join(f"{n} {kind}" for kind, n in sorted(posted["outbox"].items())) or "none"
    suppliers = "\n".join(
        f"  {s['supplier_id']}: {s['posted']} of {s['flagged']} entries, "
        f"{amount(s['posted_paise'], s['currency'])} of {amount(s['flagged_paise'], s['currency'])}"
        for s in posted["per_supplier"]
    ) or "  (no mismatches flagged yet)"
    redo = f" (a redo of {run})" if run != req.workflow_id else ""
    if req.step == steps.GATE.name:  # a hold on the evidence, not a failure: nothing was retried
        why = (f"Held at: the gate before debit notes ({req.step}): the evidence is not clear "
               f"enough to send them\nWhy: {req.error_message}\n")
    else:
        why = (f"Failed step: {req.step}\nError: {req.error_type}: {req.error_message}\n"
               f"Attempts: {req.attempts}\n")
    return (
        f"Run {req.workflow_id}{redo} needs a decision (handover #{req.handover_no}).\n"
        + why +
        f"Already posted (live): {posted['ledger_entries']} of {posted['flagged']} ledger entries, "
        f"{amounts(posted['ledger_by_currency'])} of {amounts(posted['flagged_by_currency'])}; "
        f"{posted['stock_movements']} stock movements; outbox: {outbox}; "
        f"{count(posted['parked'], 'parked item')}.\n"
        f"Per supplier:\n{suppliers}\n"
        f"Every reference: recon inspect {run} --references\n"
        f"Next, the agent would: {req.next_action}\n"
        f"Decide with: recon approve {req.workflow_id} --handover {req.handover_no} "
        f"--decision resume|retry|undo [--note WHY] [--park INVOICE ...] (signed with your "
        f"approver key: RECON_APPROVER_KEY or --key)\n"
        f"  at a failed step: resume or retry runs the step again from its last committed entry "
        f"(nothing posted twice, nothing skipped); undo reverses what the run posted.\n"
        f"  at the gate before debit notes: resume sends the notes (only on a verified ledger and "
        f"stock), retry checks the evidence again, undo reverses the run.\n"
    )


class HandoverActivities(Room):
    """The handover and the decision, the reminder, parking by decision, the gate."""

    @activity.defn(name="record_handover")
    @business_step
    async def record_handover(self, req: HandoverRequest) -> HandoverNote:
        pool = self.pool
        # No secret of this worker in the note, its mail or the memo, whatever an error echoed.
        req = req.model_copy(update={"error_message": mask_known(req.error_message),
                                     "error_type": mask_known(req.error_type),
                                     "next_action": mask_known(req.next_action)})
        async with pool.acquire() as conn, conn.transaction():
            stored = await handovers.stored_note(conn, req.workflow_id, req.handover_no)
            if stored is None:
                posted = await handovers.what_was_posted(conn, req.posted_for or req.workflow_id)
                stored = _note_text(req, posted)
                await handovers.insert_handover(
                    conn, req.workflow_id, req.handover_no, req.step, req.error_type,
                    req.error_message, req.attempts, posted, req.next_action, stored,
                )
            await enqueue(conn, Message(
                key=handover_key(req.workflow_id, req.handover_no), workflow_id=req.workflow_id,
                kind="handover", recipient=self.settings.finance_head_email,
                subject=f"Decision needed: {req.workflow_id} "
                        + ("held at the gate before debit notes" if req.step == steps.GATE.name
                           else f"stopped at {req.step}"), body=stored,
            ))
        return HandoverNote(
            workflow_id=req.workflow_id, handover_no=req.handover_no, step=req.step,
            error_type=req.error_type, error_message=req.error_message[:2000],
            attempts=req.attempts, note=stored,
        )

    @activity.defn(name="record_decision")
    @business_step
    async def record_decision(self, d: RecordedDecision) -> None:
        await handovers.record_decision(
            self.pool, d.workflow_id, d.handover_no, d.decision, d.by, d.note,
            datetime.fromisoformat(d.decided_at), d.park, d.confirmed_by or None,
        )

    @activity.defn(name="park_invoices")
    @business_step
    async def park_invoices(self, req: ParkRequest) -> int:
        """A person chose to go on without these invoices: park them with who and why. Every
        business write reads the open mismatches and comparisons, so ledger, stock and notes all
        leave them out alike. An invoice that already has a live entry is refused by the decision's
        check (activities/decisions.py) before the decision is taken (undo those entries first)."""
        pool = self.pool
        async with pool.acquire() as conn, conn.transaction():
            # its mandate: a verified decision that signed these invoices out (recon/store/mandates)
            await Parking(req.workflow_id, req.handover_no, tuple(req.invoices))(conn)
            for invoice_no in req.invoices:
                await park(
                    conn, req.workflow_id, "decision", invoice_no,
                    f"left out by {req.by} at handover #{req.handover_no}: {req.reason}",
                    evidence=f"decision on handover #{req.handover_no}",
                )
        return len(req.invoices)

    @activity.defn(name="send_reminder")
    @business_step
    async def send_reminder(self, req: ReminderRequest) -> None:
        pool = self.pool
        note = await handovers.stored_note(pool, req.workflow_id, req.handover_no)
        async with pool.acquire() as conn:
            await enqueue(conn, Message(
                key=reminder_key(req.workflow_id, req.handover_no, req.reminder_no),
                workflow_id=req.workflow_id, kind="reminder",
                recipient=self.settings.finance_head_email,
                subject=f"Reminder {req.reminder_no}: {req.workflow_id} still waits for a decision",
                body=note or "",
            ))

    @activity.defn(name="check_evidence")
    @business_step
    async def check_evidence(self, gate: GateInput) -> GateVerdict:
        """The gate before debit notes: ledger and stock verified, parked share and total normal."""
        pool = self.pool

        async def failed(verify: Callable[..., Awaitable[object]]) -> str | None:
            try:
                await verify(pool, gate.workflow_id, gate.supplier_id)
            except VerificationFailed as exc:
                return str(exc)
            return None

        # Read first: an undo raising the generation meanwhile leaves this outcome in the old one.
        generation = await current_generation(pool, gate.workflow_id)
        # The three reads are independent scans of the night: side by side on the pool.
        ledger, stock, figures = await asyncio.gather(
            failed(verify_adjustments), failed(verify_movements),
            gate_store.gate_figures(pool, gate.workflow_id, gate.supplier_id))
        reasons = [reason for reason in (ledger, stock) if reason]
        unverified = bool(reasons)
        # The worker's policy, whatever the run's input carries (older runs carry limits there).
        reasons += reasons_to_hold(figures, GatePolicy.of(self.settings))
        # The outcome the notes' mandate reads (recon/store/mandates.py): only this check writes
        # it, from what it read, whoever asked for the check.
        await record_gate(pool, gate.workflow_id, generation, gate.supplier_id,
                          verified=not unverified, passed=not reasons)
        return GateVerdict(reasons=reasons, unverified=unverified)
