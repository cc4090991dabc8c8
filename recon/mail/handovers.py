"""Delivery handovers (see recon/mail/failures.py for the rule): listing them and answering them.

`recon mail resend KEY --by NAME [--to ADDRESS]` puts the refused message back in the queue (to
a corrected address if given; the Message-ID stays, it is the same claim); `recon mail dismiss`
closes the handover without sending. Both record who decided and when, on the handover row.
"""

from __future__ import annotations

import asyncpg

from recon.errors import NotRefused  # noqa: E402 - defined with every error class
from recon.mail.sender import CHANNEL


async def open_handovers(conn: asyncpg.Connection | asyncpg.Pool) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT id, workflow_id, outbox_key, reply, created_at FROM mail_handovers"
        " WHERE decision IS NULL ORDER BY created_at")


async def handovers_of(conn: asyncpg.Connection | asyncpg.Pool,
                       workflow_id: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT * FROM mail_handovers WHERE workflow_id = $1 ORDER BY created_at", workflow_id)


async def _decide(conn: asyncpg.Connection, key: str, decision: str, by: str, note: str) -> None:
    await conn.execute(
        "UPDATE mail_handovers SET decision = $2, decided_by = $3, decision_note = $4,"
        " decided_at = now() WHERE outbox_key = $1 AND decision IS NULL",
        key, decision, by, note or None)


async def resend(pool: asyncpg.Pool, key: str, by: str, to: str | None, note: str) -> str:
    if not by.strip():
        raise ValueError("say who decides (--by NAME)")
    if to is not None and "@" not in to:
        raise ValueError(f"--to must be an email address, got {to!r}")
    async with pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow("SELECT recipient, failed_at, sent_at FROM outbox WHERE key = $1"
                                  " FOR UPDATE", key)
        if row is None:
            raise LookupError(f"no message {key!r} in the outbox (see `recon mail`)")
        if row["failed_at"] is None:
            state = "delivered" if row["sent_at"] else "still being tried"
            raise NotRefused(f"message {key} was not refused ({state}): nothing to resend")
        await conn.execute(
            "UPDATE outbox SET failed_at = NULL, next_attempt_at = now(),"
            " recipient = coalesce($2, recipient) WHERE key = $1", key, to)
        await _decide(conn, key, "resend", by, note or (f"resend to {to}" if to else "resend"))
        await conn.execute(f"NOTIFY {CHANNEL}")
    return f"{key} queued again for {to or row['recipient']}"


async def dismiss(pool: asyncpg.Pool, key: str, by: str, note: str) -> str:
    if not by.strip() or not note.strip():
        raise ValueError("say who decides and why (--by NAME --note WHY)")
    async with pool.acquire() as conn, conn.transaction():
        closed = await conn.execute(
            "UPDATE mail_handovers SET decision = 'dismiss', decided_by = $2, decision_note = $3,"
            " decided_at = now() WHERE outbox_key = $1 AND decision IS NULL", key, by, note)
    if closed == "UPDATE 0":
        raise LookupError(f"no open delivery handover for {key!r} (see `recon handovers`)")
    return f"delivery handover for {key} closed: {note}"
