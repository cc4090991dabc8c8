"""Steps 9 and 10: debit notes to suppliers who billed too much, and the finance head's summary.

Both only queue outbox rows (one key each); delivery is the outbox sender's job (recon/mail/).
Each note names itself with a claim number derived from its key, so if the mail system ever
delivers one twice, the supplier can see it is the same claim.
"""

from __future__ import annotations

from temporalio import activity

from activities import resources
from activities.step import business_step
from recon.fencing import scope_for, take_fence
from recon.mail.documents import load_debit_notes, render_debit_note
from recon.mail.summary import summary_document
from recon.models import Count, OutboxInput, RunSummary
from recon.outbox import Message, enqueue, summary_key
from recon.run_facts import run_facts


@activity.defn(name="send_debit_notes")
@business_step
async def send_debit_notes(job: OutboxInput) -> Count:
    pool = resources.pool()
    fence = await take_fence(pool, scope_for(job.workflow_id, "outbox"))
    notes = await load_debit_notes(pool, job.workflow_id, job.business_date, job.warehouse)
    async with pool.acquire() as conn:
        for note in notes:
            document = render_debit_note(note)
            await enqueue(conn, Message(
                key=note.key, workflow_id=job.workflow_id, kind="debit-note",
                recipient=note.email, subject=document.subject, body=document.text,
                supplier_id=note.supplier_id, amount_paise=note.total_paise,
            ), fence)
    return Count(count=len(notes))


@activity.defn(name="send_summary")
@business_step
async def send_summary(job: OutboxInput) -> RunSummary:
    pool = resources.pool()
    fence = await take_fence(pool, scope_for(job.workflow_id, "summary"))
    facts = await run_facts(pool, job.workflow_id)
    key = summary_key(job.workflow_id)
    document = await summary_document(pool, job.workflow_id)
    async with pool.acquire() as conn:
        await enqueue(conn, Message(
            key=key, workflow_id=job.workflow_id, kind="summary",
            recipient=job.finance_head_email, subject=document.subject, body=document.text,
            body_html=document.html, amount_paise=facts.adjustment_total_paise,
        ), fence)
    return facts.model_copy(update={"summary_key": key, "status": "Completed"})
