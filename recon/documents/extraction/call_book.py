"""The paid model's book of requests: every request on record before it is sent, every answer
durable within milliseconds of arriving.

One extraction activity owns one `CallBook`, which owns one Postgres connection of its own (not
one from the worker's pool, where answers used to queue behind other work before they were
stored). Callers hand it operations; a single writer task takes everything that has queued up
since its last commit and writes it in one transaction, so the time from "answer arrived" to
"answer committed" is one short transaction, however many calls are in flight.

`synchronous_commit = off` on this connection: a commit returns before the WAL is flushed to
disk. That is safe against what this book guards against, a dying *worker*: the commit is in
Postgres's memory and WAL buffers and is flushed within a fraction of a second whatever the
worker does. Only a crash of Postgres itself (or its machine) in that fraction of a second can
lose the last few rows; the next attempt then asks those invoices again, as for a request in
flight. It takes the fsync off every answer's path.

A request is claimed, not just recorded: its `sent` row is written in a transaction that checks
the batch's fence (recon/store/model_bill.py `claim_sent`), so an attempt that has been taken over
(a slow worker whose heartbeat came late) cannot put a request on record, nor send it, after the
new attempt has looked at what is in flight. The connection also holds an advisory lock named
after the attempt for as long as it lives: the next attempt waits for the requests of an attempt
whose connection is still open to land, instead of asking those invoices a second time
(docs/model-calls.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from recon.documents.extraction.results import Result, storable
from recon.store import extractions, model_bill
from recon.store.fences import Fence

MAX_GROUP = 500
# Safety nets: a write that has not committed within this long is treated as a lost database
# connection (a temporary error: the activity is retried and the next attempt marks what was in
# flight `lost`), and Postgres itself ends a transaction left idle for
# `recon.store.model_bill.IDLE_IN_TRANSACTION`.
WRITE_WAIT_SECONDS = 60.0


@dataclass
class _Op:
    kind: str  # sent | answered | failed | park
    payload: Any
    done: asyncio.Future | None = field(default=None)


class CallBook:
    def __init__(self, conn: asyncpg.Connection, workflow_id: str, extractor: str, model: str,
                 price_in: float, price_out: float, attempt: str, fence: Fence | None = None
                 ) -> None:
        self._conn = conn
        self._fence = fence
        self._wf, self._extractor, self._model = workflow_id, extractor, model
        self._prices = (price_in, price_out)
        self._attempt = attempt
        self._queue: asyncio.Queue[_Op | None] = asyncio.Queue()
        self._writer = asyncio.create_task(self._write_forever(), name="call-book-writer")

    @classmethod
    async def open(cls, dsn: str, workflow_id: str, extractor: str, model: str,
                   price_in: float, price_out: float, attempt: str, fence: Fence | None = None
                   ) -> CallBook:
        conn = await asyncpg.connect(dsn)
        await model_bill.prepare_book_connection(conn)
        await model_bill.hold_attempt(conn, attempt)
        return cls(conn, workflow_id, extractor, model, price_in, price_out, attempt, fence)

    # ------------------------------------------------------------------ what callers do
    def _submit(self, kind: str, payload: Any, wait: bool = True) -> asyncio.Future | None:
        done = asyncio.get_running_loop().create_future() if wait else None
        self._queue.put_nowait(_Op(kind, payload, done))
        return done

    async def _committed(self, kind: str, payload: Any) -> Any:
        done = self._submit(kind, payload)
        assert done is not None
        try:
            return await asyncio.wait_for(done, WRITE_WAIT_SECONDS)
        except TimeoutError:
            raise ConnectionError(
                f"model_calls writer: nothing committed within {WRITE_WAIT_SECONDS:.0f} s") from None

    async def sent(self, invoice_no: str, request: str) -> int:
        """Claim a request about to be sent; returns its row id once committed. Raises
        StaleAttempt when another attempt has taken the batch over: send nothing then."""
        return await self._committed("sent", (invoice_no, storable(request)))

    async def answered(self, result: Result) -> None:
        await self._committed("answered", result)

    async def failed(self, call_id: int, status: int | None, error: str) -> None:
        await self._committed("failed", (call_id, "error", status, storable(error)))

    def cancelled(self, call_id: int) -> None:
        """From a task being cancelled: queued, written before the book closes."""
        self._submit("failed", (call_id, "cancelled", None, "cancelled while in flight"), False)

    async def park(self, invoice_no: str, reason: str, evidence: str) -> None:
        await self._committed("park", (invoice_no, storable(reason), storable(evidence)))

    async def close(self) -> None:
        """Write what is queued, then close the connection (safe to call while cancelled). A
        writer that does not finish in time is abandoned: its rows stay `sent` and the next
        attempt marks them `lost`."""
        self._queue.put_nowait(None)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._writer), WRITE_WAIT_SECONDS)
        if not self._writer.done():
            self._writer.cancel()
            self._conn.terminate()
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._conn.close()), 10)

    # ------------------------------------------------------------------ the writer
    async def _write_forever(self) -> None:
        closing = False
        while not closing:
            first = await self._queue.get()
            if first is None:
                return
            group = [first]
            while not self._queue.empty() and len(group) < MAX_GROUP:
                op = self._queue.get_nowait()
                if op is None:
                    closing = True
                    break
                group.append(op)
            group = [op for op in group if not (op.done is not None and op.done.cancelled()
                                                and op.kind == "sent")]
            # What ended first, in a transaction of its own: an answer of an attempt taken over
            # meanwhile was paid for and is kept (the new attempt waits for it, and uses it).
            # Then the claims, refused whole by a fence that moved.
            settled = [op for op in group if op.kind != "sent"]
            claims = [op for op in group if op.kind == "sent"]
            for part in (settled, claims):
                if part:
                    await self._commit(part)

    async def _commit(self, part: list[_Op]) -> None:
        try:
            async with self._conn.transaction():
                ids = await self._write(part)
        except Exception as exc:
            for op in part:
                if op.done is not None and not op.done.done():
                    op.done.set_exception(exc)
            return
        for op in part:
            if op.done is not None and not op.done.done():
                op.done.set_result(ids.get(id(op)))

    async def _write(self, group: list[_Op]) -> dict[int, int]:
        ids: dict[int, int] = {}
        sent = [op for op in group if op.kind == "sent"]
        if sent:
            rows = await model_bill.claim_sent(
                self._conn, self._fence, self._wf, self._extractor, self._model, *self._prices,
                self._attempt, [op.payload[0] for op in sent], [op.payload[1] for op in sent],
            )
            by_invoice = {row["invoice_no"]: row["id"] for row in rows}
            ids = {id(op): by_invoice[op.payload[0]] for op in sent}
            # A caller cancelled while we wrote: its request will never be sent, so no row.
            unsent = [ids[id(op)] for op in sent if op.done is not None and op.done.cancelled()]
            if unsent:
                await model_bill.forget_unsent(self._conn, unsent)
        failed = [op.payload for op in group if op.kind == "failed"]
        if failed:
            await model_bill.settle_failed(self._conn, failed)
        answered = [op.payload for op in group if op.kind == "answered"]
        await extractions.write_results(self._conn, self._wf, self._extractor, self._model, answered)
        parked = [op.payload for op in group if op.kind == "park"]
        if parked:
            await extractions.park_unreadable(self._conn, self._wf, parked)
        return ids
