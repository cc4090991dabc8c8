"""Delivery handovers (see recon/mail/failures.py for the rule): listing them and answering them.

`recon mail resend KEY --by NAME [--to ADDRESS]` puts the refused message back in the queue (to
a corrected address if given; the Message-ID stays, it is the same claim); `recon mail dismiss`
closes the handover without sending. Both record who decided and when, on the handover row.
Listing them is `recon.store.mail_handovers.open_handovers` / `handovers_of`.
"""

from __future__ import annotations

import asyncpg

from recon.domain.errors import NotRefused  # noqa: F401 - defined with every error class
from recon.store import mail_deliveries, mail_handovers


async def resend(pool: asyncpg.Pool, key: str, by: str, to: str | None, note: str) -> str:
    if not by.strip():
        raise ValueError("say who decides (--by NAME)")
    if to is not None and "@" not in to:
        raise ValueError(f"--to must be an email address, got {to!r}")
    async with pool.acquire() as conn, conn.transaction():
        row = await mail_deliveries.lock_message(conn, key)
        if row is None:
            raise LookupError(f"no message {key!r} in the outbox (see `recon mail`)")
        if row["failed_at"] is None:
            state = "delivered" if row["sent_at"] else "still being tried"
            raise NotRefused(f"message {key} was not refused ({state}): nothing to resend")
        await mail_deliveries.queue_again(conn, key, to)
        await mail_handovers.decide(conn, key, "resend", by,
                                    note or (f"resend to {to}" if to else "resend"))
        await mail_deliveries.wake_senders(conn)
    return f"{key} queued again for {to or row['recipient']}"


async def dismiss(pool: asyncpg.Pool, key: str, by: str, note: str) -> str:
    if not by.strip() or not note.strip():
        raise ValueError("say who decides and why (--by NAME --note WHY)")
    async with pool.acquire() as conn, conn.transaction():
        closed = await mail_handovers.dismiss(conn, key, by, note)
    if not closed:
        raise LookupError(f"no open delivery handover for {key!r} (see `recon handovers`)")
    return f"delivery handover for {key} closed: {note}"
