"""The outbox: a message is a row first. The row's key is the promise that it goes out once;
a sender delivers unsent rows later and stamps `sent_at`. Mail carries the key, so a duplicate
delivery (the one case the mail system can force on us) says which claim it repeats."""

from __future__ import annotations

from dataclasses import dataclass, replace

import asyncpg

from recon.domain.errors import KeyPayloadConflict, VerificationFailed
from recon.domain.keys import DEBIT_NOTE, debit_note_key, row_template
from recon.domain.printable import neutral
from recon.domain.redaction import mask_known
from recon.store.fences import Fence


@dataclass(frozen=True)
class Message:
    key: str
    workflow_id: str
    kind: str
    recipient: str
    subject: str
    body: str
    supplier_id: str | None = None
    amount_paise: int | None = None
    reverses: str | None = None
    body_html: str | None = None  # an HTML alternative to `body` (the summary has one)


def _outgoing(message: Message) -> Message:
    """No secret of this process is ever queued (masked by value: recon/domain/redaction.py), and
    no control or bidirectional character (shown as an escape: recon/domain/printable.py
    `neutral`)."""
    return replace(message, subject=neutral(mask_known(message.subject)),
                   body=neutral(mask_known(message.body)),
                   body_html=neutral(mask_known(message.body_html)) if message.body_html else
                   message.body_html)


def _conflict(key: str, stored: int | None, wanted: int | None) -> KeyPayloadConflict:
    return KeyPayloadConflict(
        f"outbox key {key} already holds {stored} paise, this attempt wanted {wanted}")


async def enqueue(conn: asyncpg.Connection, message: Message, fence: Fence | None = None) -> bool:
    """Queue one message; True if it is new. Same key, different amount: a loud error."""
    message = _outgoing(message)
    async with conn.transaction():
        if fence is not None:
            await fence.check(conn)
        key = await conn.fetchval(
            """
            INSERT INTO outbox (key, workflow_id, kind, supplier_id, recipient, subject, body,
                                amount_paise, reverses, fence_token, body_html)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            ON CONFLICT (key) DO NOTHING RETURNING key
            """,
            message.key, message.workflow_id, message.kind, message.supplier_id,
            message.recipient, message.subject, message.body, message.amount_paise,
            message.reverses, fence.token if fence else None, message.body_html,
        )
        if key is None:
            stored = await conn.fetchval(
                "SELECT amount_paise FROM outbox WHERE key = $1", message.key
            )
            if stored != message.amount_paise:
                raise _conflict(message.key, stored, message.amount_paise)
    return key is not None


# Every array is a text[] (the amounts are cast here): asyncpg knows text[] without asking, and
# asks Postgres about any other array type once per new connection (recon/store/extractions.py).
_ENQUEUE_MANY = """
INSERT INTO outbox (key, workflow_id, kind, supplier_id, recipient, subject, body, amount_paise,
                    reverses, fence_token, body_html)
SELECT x.key, x.workflow_id, x.kind, x.supplier_id, x.recipient, x.subject, x.body,
       x.amount_paise::bigint, x.reverses, $11::bigint, x.body_html
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
            $8::text[], $9::text[], $10::text[]) WITH ORDINALITY
     AS x(key, workflow_id, kind, supplier_id, recipient, subject, body, amount_paise, reverses,
          body_html, ord)
ORDER BY x.ord
ON CONFLICT (key) DO NOTHING RETURNING key
"""


async def enqueue_many(conn: asyncpg.Connection, messages: list[Message],
                       fence: Fence | None = None) -> int:
    """Queue many messages in one transaction and one statement (a night's debit notes: one round
    trip, one fence and mandate check, one wake-up of the senders, instead of five statements a
    note); the number that are new. The same rules as `enqueue`, per key: a key already queued
    is left as it is, with a different amount it is a loud error (and nothing is queued)."""
    if not messages:
        return 0
    messages = [_outgoing(m) for m in messages]
    async with conn.transaction():
        if fence is not None:
            await fence.check(conn)
        new = {r["key"] for r in await conn.fetch(
            _ENQUEUE_MANY, *(list(col) for col in zip(*(
                (m.key, m.workflow_id, m.kind, m.supplier_id, m.recipient, m.subject, m.body,
                 None if m.amount_paise is None else str(m.amount_paise), m.reverses, m.body_html)
                for m in messages),
                strict=True)), fence.token if fence else None)}
        queued = [m for m in messages if m.key not in new]
        if queued:
            stored = dict(await conn.fetch(
                "SELECT key, amount_paise FROM outbox WHERE key = ANY($1::text[])",
                [m.key for m in queued]))
            for m in queued:
                if stored.get(m.key) != m.amount_paise:
                    raise _conflict(m.key, stored.get(m.key), m.amount_paise)
    return len(new)


async def suppliers_with_live_notes(
    conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str, supplier_ids: list[str],
    generation: int,
) -> set[str]:
    """Those of `supplier_ids` that have a debit note in any generation that no whole withdrawal
    cancelled (one statement for all of a night's suppliers)."""
    rows = await conn.fetch(
        "SELECT x.supplier_id FROM unnest($1::text[], $2::text[]) AS x(supplier_id, key)"
        " WHERE EXISTS (SELECT 1 FROM generate_series(1, $3) AS gen"
        " JOIN live_debit_notes n ON n.key = recon_key(x.key, gen))",
        supplier_ids, [debit_note_key(workflow_id, s) for s in supplier_ids], generation,
    )
    return {r["supplier_id"] for r in rows}


async def verify_debit_notes(
    conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str, supplier_id: str | None = None
) -> int:
    """Every supplier owed a note has exactly one live note with the amount owed."""
    row = await conn.fetchrow(
        """
        WITH g AS (SELECT recon_generation($1) AS n),
        owed AS (
            SELECT supplier_id, sum(amount_paise) AS total FROM open_mismatches
            WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)
            GROUP BY supplier_id HAVING sum(amount_paise) > 0
        ),
        live AS (
            SELECT o.supplier_id, count(n.key) AS n,
                   count(*) FILTER (WHERE n.amount_paise <> o.total) AS different
            FROM owed o CROSS JOIN g CROSS JOIN LATERAL generate_series(1, g.n) AS gen
            LEFT JOIN live_debit_notes n
                   ON n.key = recon_key(format($3, o.supplier_id), gen)
            GROUP BY o.supplier_id
        )
        SELECT (SELECT count(*) FROM owed) AS expected,
               (SELECT count(*) FROM live WHERE n = 0) AS missing,
               (SELECT count(*) FROM live WHERE n > 1) AS doubled,
               (SELECT count(*) FROM live WHERE different > 0) AS different
        """,
        workflow_id, supplier_id, row_template(DEBIT_NOTE, workflow_id=workflow_id),
    )
    if row["missing"] or row["doubled"] or row["different"]:
        raise VerificationFailed(
            f"debit note check for {workflow_id}: {row['missing']} missing, {row['doubled']} "
            f"twice, {row['different']} with a different amount, of {row['expected']} expected "
            "(withdrawn notes do not count)"
        )
    return int(row["expected"])
