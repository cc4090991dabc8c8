"""The paid model's book of requests (`model_calls`): a row per request, written before it is
sent and settled when it ends, so a crash re-pays only the requests that were in flight
(docs/model-calls.md). The grouped answer writes are in `recon.store.extractions`.

The book's own connection runs with `synchronous_commit = off`: an answer is durable against a
dying worker as soon as the commit returns (recon/documents/extraction/call_book.py says why that is safe).
"""

from __future__ import annotations

import asyncpg

from recon.domain.model_bill import LOCAL_READERS, ModelBill
from recon.store.fences import Fence

Db = asyncpg.Connection | asyncpg.Pool

IDLE_IN_TRANSACTION = "30s"  # Postgres ends a book transaction left idle this long

_SENT = """
INSERT INTO model_calls (workflow_id, invoice_no, extractor, model, request, response, outcome,
                         price_in_usd, price_out_usd, attempt)
SELECT $1, x.invoice_no, $2, $3, x.request, '', 'sent', $4, $5, $6
FROM unnest($7::text[], $8::text[]) AS x(invoice_no, request)
RETURNING id, invoice_no
"""

_FAILED = """
UPDATE model_calls m
SET outcome = x.outcome, status_code = x.status, error = x.error, settled_at = now()
FROM unnest($1::bigint[], $2::text[], $3::int[], $4::text[]) AS x(id, outcome, status, error)
WHERE m.id = x.id AND m.outcome = 'sent'
"""

# A book's connection holds this advisory lock (a session lock: Postgres drops it the moment the
# connection ends, when its worker dies or is killed), keyed by the attempt its rows carry, so a
# later attempt can tell an earlier one that is still alive (a slow worker whose heartbeat came
# late) from one that is gone.
_HOLD_ATTEMPT = "SELECT pg_advisory_lock(hashtextextended('model_calls:' || $1, 0))"
# Inside a transaction: the attempts among $1 whose book connection still holds its lock (taking
# the lock of a gone one for a moment, until the transaction ends, is harmless).
_LIVE_ATTEMPTS = """
SELECT a FROM unnest($1::text[]) AS a
WHERE NOT pg_try_advisory_xact_lock(hashtextextended('model_calls:' || a, 0))
"""

_IN_FLIGHT = """
SELECT invoice_no, attempt, extract(epoch FROM now() - called_at)::float8 AS age
FROM model_calls
WHERE workflow_id = $1 AND outcome = 'sent' AND invoice_no = ANY($2::text[])
"""


# The rows are locked in id order first (FOR UPDATE above a Sort), so two attempts marking one
# run's calls lost wait for each other instead of deadlocking. A stale attempt's book settling
# its own rows in another order can still meet this statement; Postgres then ends one of the two
# with a deadlock, which is a temporary error (recon/domain/errors.py): the attempt is retried.
MARK_LOST = """
UPDATE model_calls m SET outcome = 'lost', settled_at = now()
FROM (SELECT id FROM model_calls
      WHERE workflow_id = $1 AND outcome = 'sent' AND invoice_no = ANY($2::text[])
      ORDER BY id FOR UPDATE) AS locked
WHERE m.id = locked.id AND m.outcome = 'sent'
"""


async def prepare_book_connection(conn: asyncpg.Connection) -> None:
    """The book's connection: commits that skip the WAL flush, and Postgres ends a transaction
    left idle longer than IDLE_IN_TRANSACTION (a writer that hung)."""
    await conn.execute("SET synchronous_commit = off")
    await conn.execute(f"SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION}'")


async def hold_attempt(conn: asyncpg.Connection, attempt: str) -> None:
    """On a book's own connection, before its first request: this attempt is alive for as long
    as the connection is (see `live_attempts`)."""
    await conn.execute(_HOLD_ATTEMPT, attempt)


async def live_attempts(pool: asyncpg.Pool, attempts: list[str]) -> set[str]:
    """Which of these attempts still have their book's connection open (their worker alive)."""
    async with pool.acquire() as conn, conn.transaction():
        return {row["a"] for row in await conn.fetch(_LIVE_ATTEMPTS, attempts)}


async def in_flight(conn: Db, workflow_id: str, invoice_nos: list[str]) -> list[asyncpg.Record]:
    """(invoice_no, attempt, age in seconds) of each request to these invoices still `sent`."""
    return await conn.fetch(_IN_FLIGHT, workflow_id, invoice_nos)


async def claim_sent(conn: asyncpg.Connection, fence: Fence | None, workflow_id: str,
                     extractor: str, model: str, price_in: float, price_out: float, attempt: str,
                     invoice_nos: list[str], requests: list[str]) -> list[asyncpg.Record]:
    """`record_sent` for an attempt that still holds its batch's fence, checked in the same
    transaction (FOR SHARE: a takeover's new token waits for this commit, and once it is
    committed this refuses with StaleAttempt). So no request of a superseded attempt is on
    record after the takeover has looked at what is in flight, and none is sent unrecorded.
    The caller owns the transaction."""
    if fence is not None:
        await fence.check(conn)
    return await record_sent(conn, workflow_id, extractor, model, price_in, price_out, attempt,
                             invoice_nos, requests)


async def record_sent(conn: asyncpg.Connection, workflow_id: str, extractor: str, model: str,
                      price_in: float, price_out: float, attempt: str, invoice_nos: list[str],
                      requests: list[str]) -> list[asyncpg.Record]:
    """One `sent` row per request about to go out; (id, invoice_no) of each."""
    return await conn.fetch(
        _SENT, workflow_id, extractor, model, price_in, price_out, attempt, invoice_nos, requests,
    )


async def forget_unsent(conn: asyncpg.Connection, ids: list[int]) -> None:
    """Rows of requests whose callers were cancelled while they were written: never sent."""
    await conn.execute("DELETE FROM model_calls WHERE id = ANY($1)", ids)


async def settle_failed(conn: asyncpg.Connection, failed: list[tuple]) -> None:
    """(id, outcome, status, error) per request that ended without an answer."""
    await conn.execute(_FAILED, *(list(col) for col in zip(*failed, strict=True)))


async def mark_lost(conn: Db, workflow_id: str, invoice_nos: list[str]) -> None:
    """Requests an earlier attempt left in flight: it died, so nobody will settle them."""
    await conn.execute(MARK_LOST, workflow_id, invoice_nos)


# Requests to a model, apart from the rows of the readers that ask none (`LOCAL_READERS`, $2).
_BILL = """
SELECT
  count(*) FILTER (WHERE outcome = 'answered' AND NOT local) AS answered,
  count(*) FILTER (WHERE NOT local) AS requests,
  count(*) FILTER (WHERE outcome = 'error' AND NOT local) AS errors,
  count(*) FILTER (WHERE outcome = 'cancelled' AND NOT local) AS cancelled,
  count(*) FILTER (WHERE outcome = 'lost' AND NOT local) AS lost,
  count(*) FILTER (WHERE outcome = 'sent' AND NOT local) AS in_flight,
  count(*) FILTER (WHERE batch_key IS NOT NULL AND NOT local) AS batch_requests,
  count(*) FILTER (WHERE outcome = 'batched' AND NOT local) AS batched,
  (SELECT coalesce(array_agg(b.batch_id ORDER BY b.generation, b.group_no), '{}')
   FROM model_batches b WHERE b.workflow_id = $1 AND b.batch_id IS NOT NULL) AS batch_ids,
  (SELECT coalesce(sum(b.answered), 0)::bigint FROM model_batches b
   WHERE b.workflow_id = $1 AND b.read_at IS NULL) AS waiting_answered,
  (SELECT coalesce(sum(b.requests), 0)::bigint FROM model_batches b
   WHERE b.workflow_id = $1 AND b.read_at IS NULL) AS waiting_requests,
  count(DISTINCT invoice_no) FILTER (WHERE local) AS read_without_model,
  coalesce(sum(prompt_tokens) FILTER (WHERE NOT local), 0)::bigint AS prompt_tokens,
  coalesce(sum(completion_tokens) FILTER (WHERE NOT local), 0)::bigint AS completion_tokens,
  coalesce(sum(coalesce(prompt_tokens, 0) * coalesce(price_in_usd, 0)
             + coalesce(completion_tokens, 0) * coalesce(price_out_usd, 0))
           FILTER (WHERE NOT local) / 1000000, 0) AS cost_usd
FROM (SELECT *, extractor = ANY($2::text[]) AS local FROM model_calls WHERE workflow_id = $1) m
"""


async def bill_row(conn: Db, workflow_id: str) -> asyncpg.Record:
    """The night's requests by outcome, tokens, and cost at the prices recorded per row."""
    return await conn.fetchrow(_BILL, workflow_id, list(LOCAL_READERS))


async def model_bill(conn: asyncpg.Pool | asyncpg.Connection, workflow_id: str) -> ModelBill:
    """The night's bill as people read it (`recon status`, the summary mail, `recon inspect`)."""
    row = await bill_row(conn, workflow_id)
    return ModelBill(
        answered=row["answered"], requests=row["requests"], errors=row["errors"],
        cancelled=row["cancelled"], lost=row["lost"], in_flight=row["in_flight"],
        prompt_tokens=row["prompt_tokens"], completion_tokens=row["completion_tokens"],
        cost_usd=round(float(row["cost_usd"]), 6), read_without_model=row["read_without_model"],
        batch_requests=row["batch_requests"], batched=row["batched"],
        batch_ids=tuple(row["batch_ids"]), waiting_answered=row["waiting_answered"],
        waiting_requests=row["waiting_requests"],
    )
