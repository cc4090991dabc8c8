"""The night's batches (`model_batches`) and their requests' `model_calls` rows (outcome
`batched`): every statement of batch mode (docs/model-calls.md "Batch mode").

A group is planned once, with its requests, in one transaction before anything is uploaded, so
every attempt uploads the same lines; its batch id is unique, so a group never has two batches
on record; its files are read in one transaction that settles each `batched` row once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

Db = asyncpg.Connection | asyncpg.Pool


@dataclass(frozen=True)
class PlannedRequest:
    invoice_no: str
    request: str  # the request as recorded (model and messages), word for word


_PLAN = """
INSERT INTO model_batches (key, workflow_id, generation, group_no, requests, input_name, deadline_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT DO NOTHING
"""

_BATCHED = """
INSERT INTO model_calls (workflow_id, invoice_no, extractor, model, request, response, outcome,
                         price_in_usd, price_out_usd, attempt, batch_key)
SELECT $1, x.invoice_no, $2, $3, x.request, '', 'batched', $4, $5, $6, $7
FROM unnest($8::text[], $9::text[]) AS x(invoice_no, request)
ON CONFLICT DO NOTHING
"""


async def groups_of(db: Db, workflow_id: str, generation: int) -> list[asyncpg.Record]:
    return await db.fetch("SELECT * FROM model_batches WHERE workflow_id = $1 AND generation = $2"
                          " ORDER BY group_no", workflow_id, generation)


async def batch_row(db: Db, key: str) -> asyncpg.Record:
    return await db.fetchrow("SELECT * FROM model_batches WHERE key = $1", key)


async def plan(conn: asyncpg.Connection, workflow_id: str, generation: int,
               groups: list[tuple[str, str, list[PlannedRequest]]], extractor: str, model: str,
               prices: tuple[float, float], attempt: str, deadline: datetime | None) -> None:
    """Every group and its requests, in one transaction: (key, input file name, requests)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('model_batches:' || $1))",
                           workflow_id)
        if await groups_of(conn, workflow_id, generation):
            return  # a racing attempt planned them first: its groups are the night's
        for group_no, (key, name, requests) in enumerate(groups, 1):
            await conn.execute(_PLAN, key, workflow_id, generation, group_no, len(requests), name,
                               deadline)
            await conn.execute(_BATCHED, workflow_id, extractor, model, *prices, attempt, key,
                               [r.invoice_no for r in requests], [r.request for r in requests])


async def requests_of(db: Db, key: str) -> list[asyncpg.Record]:
    """A group's requests in a stable order (the input file is the same bytes every attempt)."""
    return await db.fetch("SELECT id, invoice_no, request, outcome FROM model_calls"
                          " WHERE batch_key = $1 ORDER BY id", key)


async def set_input_file(db: Db, key: str, file_id: str) -> None:
    await db.execute("UPDATE model_batches SET input_file_id = $2, status = 'uploaded'"
                     " WHERE key = $1", key, file_id)


async def mark_create_started(db: Db, key: str) -> datetime:
    """Committed before `batches.create` is called: from now on a batch may exist for this
    group, and every later attempt looks it up before creating one."""
    return await db.fetchval(
        "UPDATE model_batches SET create_started_at = coalesce(create_started_at, now())"
        " WHERE key = $1 RETURNING create_started_at", key)


async def set_batch(db: Db, key: str, batch_id: str, status: str) -> None:
    """The group's batch; the unique batch id and `IS NULL` keep the first one found."""
    await db.execute("UPDATE model_batches SET batch_id = $2, status = $3"
                     " WHERE key = $1 AND batch_id IS NULL", key, batch_id, status)


async def set_progress(db: Db, key: str, status: str, answered: int, failed: int,
                       output_file_id: str | None, error_file_id: str | None) -> None:
    await db.execute(
        "UPDATE model_batches SET status = $2, answered = $3, failed = $4, output_file_id = $5,"
        " error_file_id = $6 WHERE key = $1", key, status, answered, failed, output_file_id,
        error_file_id)


async def mark_cancel_asked(db: Db, key: str) -> None:
    await db.execute("UPDATE model_batches SET cancel_asked_at = coalesce(cancel_asked_at, now())"
                     " WHERE key = $1", key)


async def lock_for_reading(conn: asyncpg.Connection, key: str) -> asyncpg.Record:
    """The group's row, locked for the reading transaction (a second reader waits, then finds it
    read)."""
    return await conn.fetchrow("SELECT * FROM model_batches WHERE key = $1 FOR UPDATE", key)


_SETTLE_UNANSWERED = """
UPDATE model_calls m
SET outcome = x.outcome, status_code = x.status, error = x.error, settled_at = now()
FROM unnest($2::text[], $3::text[], $4::int[], $5::text[]) AS x(invoice_no, outcome, status, error)
WHERE m.batch_key = $1 AND m.invoice_no = x.invoice_no AND m.outcome = 'batched'
"""


async def settle_unanswered(conn: asyncpg.Connection, key: str,
                            settled: list[tuple[str, str, int | None, str | None]]) -> None:
    """(invoice_no, outcome, status, error) per request the batch did not answer."""
    if settled:
        await conn.execute(_SETTLE_UNANSWERED, key, *(list(c) for c in zip(*settled, strict=True)))


async def mark_read(conn: asyncpg.Connection, key: str) -> None:
    await conn.execute("UPDATE model_batches SET read_at = now() WHERE key = $1", key)


async def batches_of_run(db: Db, workflow_id: str) -> list[asyncpg.Record]:
    """The night's batches as people read them: `recon status`, `recon inspect`, the summary."""
    return await db.fetch(
        "SELECT key, batch_id, status, requests, answered, failed, read_at IS NOT NULL AS read"
        " FROM model_batches WHERE workflow_id = $1 ORDER BY generation, group_no", workflow_id)


async def documents_of(db: Db, workflow_id: str, invoice_nos: list[str]) -> dict[str, asyncpg.Record]:
    """The documents a group's answers are checked against, by invoice key."""
    rows = await db.fetch("SELECT invoice_no, supplier_id, document FROM run_invoices"
                          " WHERE workflow_id = $1 AND invoice_no = ANY($2::text[])",
                          workflow_id, invoice_nos)
    return {r["invoice_no"]: r for r in rows}


_READ_COUNTS = """
SELECT count(*) FILTER (WHERE m.outcome = 'answered' AND NOT p.parked) AS extracted,
       count(*) FILTER (WHERE p.parked) AS parked
FROM model_calls m
CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM parked_items i WHERE i.workflow_id = $1
                                   AND i.invoice_no = m.invoice_no AND i.line_no IS NULL)
                    AS parked) p
WHERE m.batch_key = $2
"""


async def read_counts(db: Db, workflow_id: str, key: str) -> tuple[int, int]:
    """A read group's figures from its records: answers extracted (not parked whole), and
    invoices parked whole (an unreadable answer, a document the provider refused)."""
    row = await db.fetchrow(_READ_COUNTS, workflow_id, key)
    return row["extracted"], row["parked"]
