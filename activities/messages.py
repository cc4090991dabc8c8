"""Steps 9 and 10: debit notes to suppliers who billed too much, and the finance head's summary.

Both only queue outbox rows (one key each); delivery is the outbox sender's job (recon/mail/).
Each note names itself with a claim number derived from its key, so if the mail system ever
delivers one twice, the supplier can see it is the same claim.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from temporalio import activity

from activities.resources import Room
from activities.step import business_step
from recon.domain.keys import fence_scope, generation_key, scoped_summary_key, summary_key
from recon.domain.labels import RunStatus
from recon.domain.models import Count, OutboxInput, RunSummary
from recon.mail.documents import load_debit_notes, render_debit_note
from recon.mail.summary import summary_document
from recon.store.generations import current_generation
from recon.store.mandates import Notes
from recon.store.outbox import (
    Message,
    enqueue,
    enqueue_many,
    suppliers_with_live_notes,
    verify_debit_notes,
)
from recon.store.run_facts import run_facts


class MessageActivities(Room):
    """Steps 9 and 10."""

    @activity.defn(name="send_debit_notes")
    @business_step
    async def send_debit_notes(self, job: OutboxInput) -> Count:
        pool = self.pool
        fence = await self.take_fence(fence_scope(job.workflow_id, "outbox"))
        generation = await current_generation(pool, job.workflow_id)
        # The gate's own outcome, or a verified resume at the gate (docs/design.md §3,
        # "Mandates"): asked now, and again in every note's transaction.
        fence = fence.with_mandate(Notes(job.workflow_id, job.supplier_id, generation))
        async with pool.acquire() as conn:
            await fence.check_mandate(conn)
        notes = await load_debit_notes(pool, job.workflow_id, job.business_date, job.warehouse,
                                       job.supplier_id, own_gstin=self.settings.own_gstin)
        async with pool.acquire() as conn:
            # sent already (a reset that undid nothing sends nothing new)
            sent = await suppliers_with_live_notes(
                conn, job.workflow_id, [note.supplier_id for note in notes], generation)
            messages: list[Message] = []
            for note in notes:
                if note.supplier_id in sent:
                    continue
                note = replace(note, key=generation_key(note.key, generation))
                document = render_debit_note(note)
                messages.append(Message(
                    key=note.key, workflow_id=job.workflow_id, kind="debit-note",
                    recipient=note.email, subject=document.subject, body=document.text,
                    supplier_id=note.supplier_id, amount_paise=note.total_paise,
                ))
            # every note in one transaction, fenced and mandated once
            await enqueue_many(conn, messages, fence)
            await verify_debit_notes(conn, job.workflow_id, job.supplier_id)
        return Count(count=len(notes))

    @activity.defn(name="send_summary")
    @business_step
    async def send_summary(self, job: OutboxInput) -> RunSummary:
        pool = self.pool
        fence = await self.take_fence(fence_scope(job.workflow_id, "summary"))
        # Three reads of the finished night, side by side on the pool (each is a scan of the
        # night's rows: ~0.2 s apiece at 100,000 invoices).
        facts, generation, document = await asyncio.gather(
            run_facts(pool, job.workflow_id), current_generation(pool, job.workflow_id),
            summary_document(pool, job.workflow_id))
        # A redo's summary is a correcting summary of its own (per scope); a reset that undid
        # nothing sends none.
        key = scoped_summary_key(generation_key(summary_key(job.workflow_id), generation),
                                 job.supplier_id)
        async with pool.acquire() as conn:
            await enqueue(conn, Message(
                key=key, workflow_id=job.workflow_id, kind="summary",
                recipient=self.settings.finance_head_email, subject=document.subject, body=document.text,
                body_html=document.html, amount_paise=facts.adjustment_total_paise,
            ), fence)
        return facts.model_copy(update={"summary_key": key, "status": RunStatus.COMPLETED.value})
