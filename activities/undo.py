"""The undo's compensations, one activity per store, run newest first by the undo workflow:
withdrawal notes, then opposite stock movements, then ledger reversals.

Each takes the original run's fence for its store, so the forward run's attempts, however stale,
can never post after their reversal; and each writes under `undo:{original key}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from temporalio import activity

from activities.resources import Room
from activities.step import business_step, report_progress
from recon.domain.keys import fence_scope, undo_key, undo_workflow_id, withdrawal_key
from recon.domain.models import GenerationRequest, Reversed, UndoRequest
from recon.ledger.pusher import cancel_run
from recon.mail.documents import render_withdrawal
from recon.runtime import failpoints
from recon.store import acceptances, mandates
from recon.store.ledger import LedgerEntry, post_entries
from recon.store.outbox import Message, enqueue
from recon.store.stock import StockMovement, move_stock
from recon.store.undo import Scope, plan_undo, reversal_keys, reversed_paise

T = TypeVar("T")


def _batches(items: list[T], step: str, size: int) -> Iterator[list[T]]:
    """Committed batches (RECON_POST_BATCH), with the failpoints of the forward steps."""
    for start in range(0, len(items), size):
        batch = items[start:start + size]
        for n in range(start + 1, start + len(batch) + 1):
            failpoints.hit(step, n)
        yield batch
        report_progress(start + len(batch))


def _scope(req: UndoRequest) -> Scope:
    return Scope(req.run_workflow_id, req.supplier_id, tuple(req.references))


def _mandate(req: UndoRequest) -> mandates.Undo:
    """A verified undo of this night and scope, still good (docs/design.md §3, "Mandates")."""
    return mandates.Undo(req.run_workflow_id, undo_workflow_id(
        req.run_workflow_id, req.supplier_id, req.references))


class UndoActivities(Room):
    """The undo workflow's activities, one per store."""

    @activity.defn(name="open_next_generation")
    @business_step
    async def open_next_generation(self, req: GenerationRequest) -> int:
        """Before anything is reversed, the run moves to its next generation: whatever posts for
        this night afterwards (a redo, or a reset of the night) posts under fresh keys, so it can
        never collide with an entry this undo reverses. One generation per authorised undo (a
        signed request, or an undo decision, on record): a retried activity, or a reset of the
        undo before any redo, raises it once; without one on record, refused."""
        return await mandates.open_next_generation(self.pool, req.run_workflow_id,
                                                   req.raised_by)

    @activity.defn(name="withdraw_debit_notes")
    @business_step
    async def withdraw_debit_notes(self, req: UndoRequest) -> Reversed:
        """An email cannot be unsent: a withdrawal note follows every debit note in scope."""
        pool = self.pool
        scope = _scope(req)
        fence = (await self.take_fence(fence_scope(req.run_workflow_id, "outbox"))
                 ).with_mandate(_mandate(req))
        async with self.pool.acquire() as conn:
            await fence.check_mandate(conn)  # and in every write's transaction
        plan = await plan_undo(pool, scope)
        withdrawn, withdrawn_paise = 0, 0
        async with pool.acquire() as conn:
            for note in plan.notes:
                amount = note["amount_paise"]
                if scope.references:
                    amount = sum(r["amount_paise"] for r in plan.ledger
                                 if r["supplier_id"] == note["supplier_id"])
                key = withdrawal_key(note["key"], scope.references)
                document = render_withdrawal(
                    withdrawal_key=key, note_key=note["key"], supplier_name=note["supplier_name"],
                    note_total_paise=note["amount_paise"], withdrawn_paise=amount,
                    note_was_sent=note["sent_at"] is not None, currency=note["currency"],
                )
                await enqueue(conn, Message(
                    key=key, workflow_id=req.run_workflow_id, kind="withdrawal",
                    recipient=note["recipient"], subject=document.subject, body=document.text,
                    supplier_id=note["supplier_id"], amount_paise=-amount,
                    reverses=note["key"],
                ), fence)
                withdrawn += 1
                withdrawn_paise += amount
                report_progress(withdrawn)
        return Reversed(count=withdrawn, paise=withdrawn_paise)

    @activity.defn(name="reverse_stock_movements")
    @business_step
    async def reverse_stock_movements(self, req: UndoRequest) -> Reversed:
        pool = self.pool
        fence = (await self.take_fence(fence_scope(req.run_workflow_id, "stock"))
                 ).with_mandate(_mandate(req))
        async with self.pool.acquire() as conn:
            await fence.check_mandate(conn)  # and in every write's transaction
        plan = await plan_undo(pool, _scope(req))
        moves = [
            StockMovement(
                key=undo_key(m["key"]), workflow_id=req.run_workflow_id, warehouse=m["warehouse"],
                sku=m["sku"], qty=-m["qty"], supplier_id=m["supplier_id"],
                invoice_no=m["invoice_no"], line_no=m["line_no"],
                note=f"reversal of {m['key']}: {req.reason} (by {req.by})", reverses=m["key"],
            )
            for m in plan.stock
        ]
        done = 0
        async with pool.acquire() as conn:
            for batch in _batches(moves, "reverse_stock_movements", self.settings.post_batch_size):
                done += await move_stock(conn, batch, fence)
            # What the reversed lines accepted of their PO lines is open again for later nights
            # (and for this night's redo): by line for an undo of named entries, else the scope.
            await acceptances.retire(
                conn, req.run_workflow_id, req.supplier_id,
                [(m["invoice_no"], m["line_no"]) for m in plan.stock] if req.references else None)
        return Reversed(count=done)

    @activity.defn(name="reverse_ledger_entries")
    @business_step
    async def reverse_ledger_entries(self, req: UndoRequest) -> Reversed:
        pool = self.pool
        fence = (await self.take_fence(fence_scope(req.run_workflow_id, "ledger"))
                 ).with_mandate(_mandate(req))
        async with self.pool.acquire() as conn:
            await fence.check_mandate(conn)  # and in every write's transaction
        plan = await plan_undo(pool, _scope(req))
        entries = [
            LedgerEntry(
                reference=undo_key(r["reference"]), workflow_id=req.run_workflow_id,
                invoice_no=r["invoice_no"], supplier_id=r["supplier_id"], line_no=r["line_no"],
                kind="reversal", amount_paise=-r["amount_paise"],
                memo=f"reversal: {req.reason} (by {req.by})", reverses=r["reference"],
            )
            for r in plan.ledger
        ]
        done = 0
        async with pool.acquire() as conn:
            for batch in _batches(entries, "reverse_ledger_entries", self.settings.post_batch_size):
                done += await post_entries(conn, batch, fence)
            outside = self.outside
            if outside is not None:
                # Each reversal whose original reached the outside ledger cancels it there, the
                # ledger's way, keyed `undo:{key}` too; the whole undo's, a retry's included.
                await cancel_run(conn, outside, fence, req.run_workflow_id, req.supplier_id,
                                 await reversal_keys(conn, _scope(req)), "reverse_ledger_entries")
            paise = await reversed_paise(conn, _scope(req))
        return Reversed(count=done, paise=paise)
