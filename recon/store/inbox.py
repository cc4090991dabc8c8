"""Messages `recon import --maildir` has dealt with, by Message-ID: each is imported once, or
filed once as unreadable with its reason."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import asyncpg


async def known_messages(conn: asyncpg.Connection, message_ids: Sequence[str]) -> set[str]:
    rows = await conn.fetch("SELECT message_id FROM mail_messages WHERE message_id = ANY($1::text[])",
                            list(message_ids))
    return {r["message_id"] for r in rows}


async def record_messages(conn: asyncpg.Connection,
                          rows: Sequence[tuple[str, date, str, str, str, int, str]]) -> None:
    """(message_id, business_date, warehouse, outcome, reason, documents, file_name)."""
    if rows:
        await conn.executemany(
            "INSERT INTO mail_messages (message_id, business_date, warehouse, outcome, reason,"
            " documents, file_name) VALUES ($1, $2, $3, $4, $5, $6, $7)"
            " ON CONFLICT (message_id) DO NOTHING",
            sorted(rows, key=lambda r: r[0].encode()))  # key order: two pollers wait, never deadlock
