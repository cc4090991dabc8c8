"""A night's debit notes are queued in one statement (recon/store/outbox.py `enqueue_many`), under
the same promise as one at a time: each key once, a key queued again with another amount a loud
error that queues nothing, and a stale fence writes nothing."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from recon.domain.errors import KeyPayloadConflict, StaleAttempt
from recon.domain.keys import debit_note_key, generation_key
from recon.store.fences import take_fence
from recon.store.outbox import Message, enqueue_many, suppliers_with_live_notes


def _note(run: str, supplier: str, paise: int) -> Message:
    return Message(key=f"{run}:debit-note:{supplier}", workflow_id=run, kind="debit-note",
                   recipient=f"{supplier}@example.test", subject=f"note {supplier}",
                   body="body", supplier_id=supplier, amount_paise=paise)


async def _queued(pool: asyncpg.Pool, run: str) -> dict[str, int]:
    return dict(await pool.fetch(
        "SELECT key, amount_paise FROM outbox WHERE workflow_id = $1", run))


async def test_many_notes_are_queued_once_each(pool: asyncpg.Pool) -> None:
    run = f"recon-outbox-batch-{uuid.uuid4().hex[:8]}"
    fence = await take_fence(pool, f"{run}:outbox")
    notes = [_note(run, "S1", 100), _note(run, "S2", 250)]
    async with pool.acquire() as conn:
        assert await enqueue_many(conn, notes, fence) == 2
        # an attempt that queues them again (and one more) adds only the new one
        assert await enqueue_many(conn, [*notes, _note(run, "S3", 7)], fence) == 1
    assert await _queued(pool, run) == {n.key: n.amount_paise for n in notes} | {
        f"{run}:debit-note:S3": 7}

    async with pool.acquire() as conn:
        with pytest.raises(KeyPayloadConflict):
            await enqueue_many(conn, [_note(run, "S4", 1), _note(run, "S2", 999)], fence)
        # a newer attempt took the scope over: this one writes nothing
        await take_fence(pool, f"{run}:outbox")
        with pytest.raises(StaleAttempt):
            await enqueue_many(conn, [_note(run, "S5", 1)], fence)
    assert set(await _queued(pool, run)) == {f"{run}:debit-note:S{n}" for n in (1, 2, 3)}


async def test_suppliers_with_live_notes_are_the_ones_queued(pool: asyncpg.Pool) -> None:
    """A supplier has a live note in any generation up to the current one, unless withdrawn."""
    run = f"recon-outbox-live-{uuid.uuid4().hex[:8]}"
    first, second = debit_note_key(run, "S1"), generation_key(debit_note_key(run, "S2"), 2)
    withdrawn = debit_note_key(run, "S3")
    async with pool.acquire() as conn:
        await enqueue_many(conn, [
            Message(key=key, workflow_id=run, kind="debit-note", recipient="a@example.test",
                    subject="s", body="b", supplier_id=supplier, amount_paise=5)
            for key, supplier in ((first, "S1"), (second, "S2"), (withdrawn, "S3"))] + [
            Message(key=f"undo:{withdrawn}", workflow_id=run, kind="withdrawal",
                    recipient="a@example.test", subject="s", body="b", supplier_id="S3",
                    reverses=withdrawn)])
    suppliers = ["S1", "S2", "S3", "S4"]
    assert await suppliers_with_live_notes(pool, run, suppliers, 1) == {"S1"}
    assert await suppliers_with_live_notes(pool, run, suppliers, 2) == {"S1", "S2"}


async def test_a_night_s_notes_cost_the_same_statements_however_many(pool: asyncpg.Pool) -> None:
    """The statement-count guard: queuing six notes takes as many statements as queuing one."""
    counts = []
    for many in (1, 6):
        run = f"recon-outbox-count-{uuid.uuid4().hex[:8]}"
        fence = await take_fence(pool, f"{run}:outbox")
        statements: list[str] = []

        def log(record: object, statements: list[str] = statements) -> None:
            statements.append(record.query)  # type: ignore[attr-defined]

        async with pool.acquire() as conn:
            conn.add_query_logger(log)
            await enqueue_many(conn, [_note(run, f"S{n}", n + 1) for n in range(many)], fence)
            await asyncio.sleep(0.1)  # the logger is called soon after each statement
            conn.remove_query_logger(log)
        assert len(await _queued(pool, run)) == many
        counts.append(len(statements))
    assert counts[0] == counts[1] and counts[0] <= 4, counts
