"""The outbox: a message is a row first. The row's key is the promise that it goes out once;
a sender delivers unsent rows later and stamps `sent_at`. Mail carries the key, so a duplicate
delivery (the one case the mail system can force on us) says which claim it repeats."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from recon.errors import KeyPayloadConflict
from recon.fencing import Fence


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


def debit_note_key(workflow_id: str, supplier_id: str) -> str:
    return f"{workflow_id}:debit-note:{supplier_id}"


def summary_key(workflow_id: str) -> str:
    return f"{workflow_id}:summary"


async def enqueue(conn: asyncpg.Connection, message: Message, fence: Fence | None = None) -> bool:
    """Queue one message; True if it is new. Same key, different amount: a loud error."""
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
                raise KeyPayloadConflict(
                    f"outbox key {message.key} already holds {stored} paise, "
                    f"this attempt wanted {message.amount_paise}"
                )
    return key is not None
