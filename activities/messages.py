"""Steps 9 and 10: debit notes to suppliers who billed too much, and the finance head's summary.

Both only queue outbox rows (one key each); delivery is the outbox sender's job. Each note carries
its own key as the claim reference, so if the mail system ever delivers one twice, the supplier
can see it is the same claim.
"""

from __future__ import annotations

from temporalio import activity

from activities import resources
from activities.step import business_step
from recon.fencing import scope_for, take_fence
from recon.model_bill import model_bill
from recon.models import Count, OutboxInput, RunSummary
from recon.money import rupees
from recon.outbox import Message, debit_note_key, enqueue, summary_key
from recon.run_facts import run_facts


@activity.defn(name="send_debit_notes")
@business_step
async def send_debit_notes(job: OutboxInput) -> Count:
    pool = resources.pool()
    fence = await take_fence(pool, scope_for(job.workflow_id, "outbox"))
    suppliers = await pool.fetch(
        """
        SELECT m.supplier_id, s.name, s.email, sum(m.amount_paise)::bigint AS total,
               array_agg(m.reference || '  ' || m.detail || '  ' || m.amount_paise
                         ORDER BY m.seq) AS entries
        FROM mismatches m JOIN suppliers s USING (supplier_id)
        WHERE m.workflow_id = $1
        GROUP BY m.supplier_id, s.name, s.email
        HAVING sum(m.amount_paise) > 0
        ORDER BY m.supplier_id
        """,
        job.workflow_id,
    )
    async with pool.acquire() as conn:
        for s in suppliers:
            key = debit_note_key(job.workflow_id, s["supplier_id"])
            lines = "\n".join(f"  - {e} paise" for e in s["entries"])
            body = (
                f"Dear {s['name']},\n\nOur reconciliation of invoices for {job.business_date} "
                f"(warehouse {job.warehouse}) found that we were billed {rupees(s['total'])} more "
                f"than the goods received and the agreed prices support:\n{lines}\n\n"
                f"We have raised a debit note for {rupees(s['total'])}.\n"
                f"Claim reference: {key}\n"
                "If you receive this note more than once, it is the same claim: the claim "
                "reference above identifies it.\n"
            )
            await enqueue(conn, Message(
                key=key, workflow_id=job.workflow_id, kind="debit-note", recipient=s["email"],
                subject=f"Debit note {key}", body=body, supplier_id=s["supplier_id"],
                amount_paise=int(s["total"]),
            ), fence)
    return Count(count=len(suppliers))


@activity.defn(name="send_summary")
@business_step
async def send_summary(job: OutboxInput) -> RunSummary:
    pool = resources.pool()
    fence = await take_fence(pool, scope_for(job.workflow_id, "summary"))
    facts = await run_facts(pool, job.workflow_id)
    bill = await model_bill(pool, job.workflow_id)
    parked = await pool.fetch(
        "SELECT invoice_no, line_no, step, reason FROM parked_items WHERE workflow_id = $1"
        " ORDER BY invoice_no, line_no NULLS FIRST",
        job.workflow_id,
    )
    parked_lines = "\n".join(
        f"  - {p['invoice_no']}" + (f" line {p['line_no']}" if p["line_no"] else "")
        + f" ({p['step']}): {p['reason']}"
        for p in parked
    ) or "  (none)"
    key = summary_key(job.workflow_id)
    body = (
        f"Reconciliation {job.workflow_id}\n\n"
        f"Invoices read: {facts.invoices}\n"
        f"Mismatches flagged: {facts.mismatches}\n"
        f"Ledger adjustments posted: {facts.ledger_posted} "
        f"totalling {rupees(facts.adjustment_total_paise)}\n"
        f"Stock movements: {facts.stock_movements}\n"
        f"Debit notes queued: {facts.debit_notes}\n"
        f"{bill.line()}\n"
        f"Parked items ({len(parked)}), each needs a person:\n{parked_lines}\n"
    )
    async with pool.acquire() as conn:
        await enqueue(conn, Message(
            key=key, workflow_id=job.workflow_id, kind="summary",
            recipient=job.finance_head_email, subject=f"Reconciliation summary {job.workflow_id}",
            body=body, amount_paise=facts.adjustment_total_paise,
        ), fence)
    return facts.model_copy(update={"summary_key": key, "status": "Completed"})
