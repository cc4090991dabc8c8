"""Delivery handovers (`mail_handovers`): a refused supplier note waiting for a person.

The rule they keep (see recon/mail/failures.py): a refused note never reopens its run. At most
one open handover per outbox key, enforced by the partial unique index the insert relies on.
"""

from __future__ import annotations

import asyncpg

Db = asyncpg.Connection | asyncpg.Pool

_HANDOVERS = """
SELECT '#' || handover_no AS ref, step AS what, error_type || ': ' || left(error_message, 300)
       AS why, decision, decided_by, decision_note, created_at
FROM handovers WHERE workflow_id = $1
UNION ALL
SELECT 'mail ' || id, 'deliver ' || outbox_key, left(reply, 300), decision, decided_by,
       decision_note, created_at
FROM mail_handovers WHERE workflow_id = $1
ORDER BY created_at
"""


async def open_handover(conn: asyncpg.Connection, outbox_key: str, workflow_id: str, reply: str,
                        note: str) -> int | None:
    """The new handover's id, or None when the message already has an open one."""
    return await conn.fetchval(
        "INSERT INTO mail_handovers (outbox_key, workflow_id, reply, note)"
        " VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (outbox_key) WHERE decision IS NULL DO NOTHING RETURNING id",
        outbox_key, workflow_id, reply, note,
    )


async def open_handovers(conn: Db) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT id, workflow_id, outbox_key, reply, created_at FROM mail_handovers"
        " WHERE decision IS NULL ORDER BY created_at")


async def handovers_of(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT * FROM mail_handovers WHERE workflow_id = $1 ORDER BY created_at", workflow_id)


async def decide(conn: asyncpg.Connection, key: str, decision: str, by: str, note: str) -> None:
    """Close the open handover of `key` with who decided what (no-op when none is open)."""
    await conn.execute(
        "UPDATE mail_handovers SET decision = $2, decided_by = $3, decision_note = $4,"
        " decided_at = now() WHERE outbox_key = $1 AND decision IS NULL",
        key, decision, by, note or None)


async def is_open(conn: Db, key: str) -> bool:
    """Does the message have a delivery handover waiting for a person?"""
    return bool(await conn.fetchval(
        "SELECT 1 FROM mail_handovers WHERE outbox_key = $1 AND decision IS NULL", key))


async def dismiss(conn: asyncpg.Connection, key: str, by: str, note: str) -> bool:
    """Close the open handover without sending; False when none was open."""
    closed = await conn.execute(
        "UPDATE mail_handovers SET decision = 'dismiss', decided_by = $2, decision_note = $3,"
        " decided_at = now() WHERE outbox_key = $1 AND decision IS NULL", key, by, note)
    return closed != "UPDATE 0"


async def run_handovers(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    """Every handover of the run, step and delivery alike, oldest first: the summary's list."""
    return await conn.fetch(_HANDOVERS, workflow_id)
