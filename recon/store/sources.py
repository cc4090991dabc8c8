"""The sources of each warehouse's night (`sources`), and what each night took from each
(`source_marks`, `source_items`): every statement about them (recon/sources/ decides)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import asyncpg


async def add(pool: asyncpg.Pool, warehouse: str, kind: str, url: str, settings: dict[str, Any],
              secret_ref: str | None) -> int | None:
    """The new source's id, or None when the warehouse has this URL already."""
    return await pool.fetchval(
        "INSERT INTO sources (warehouse, kind, url, settings, secret_ref)"
        " VALUES ($1, $2, $3, $4::jsonb, $5) ON CONFLICT (warehouse, url) DO NOTHING RETURNING id",
        warehouse, kind, url, json.dumps(settings), secret_ref)


async def listed(pool: asyncpg.Pool, warehouse: str | None = None) -> list[asyncpg.Record]:
    return await pool.fetch(
        "SELECT id, warehouse, kind, url, settings::text AS settings, secret_ref, added_at"
        " FROM sources WHERE $1::text IS NULL OR warehouse = $1 ORDER BY warehouse, id", warehouse)


async def one(pool: asyncpg.Pool, source_id: int) -> asyncpg.Record | None:
    return await pool.fetchrow(
        "SELECT id, warehouse, kind, url, settings::text AS settings, secret_ref, added_at"
        " FROM sources WHERE id = $1", source_id)


async def remove(pool: asyncpg.Pool, source_id: int) -> bool:
    """Removed with what it fetched (the documents it imported stay: they are the nights')."""
    return await pool.fetchval("DELETE FROM sources WHERE id = $1 RETURNING true", source_id) or False


# ------------------------------------------------------------------ a night's mark
async def mark(conn: asyncpg.Connection, source_id: int, workflow_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "SELECT uidvalidity, uidnext, marked_at FROM source_marks"
        " WHERE source_id = $1 AND workflow_id = $2", source_id, workflow_id)


async def set_mark(conn: asyncpg.Connection, source_id: int, workflow_id: str,
                   uidvalidity: int | None = None, uidnext: int | None = None) -> bool:
    """True if this call set the night's mark; False if an attempt before it had."""
    return bool(await conn.fetchval(
        "INSERT INTO source_marks (source_id, workflow_id, uidvalidity, uidnext)"
        " VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING true",
        source_id, workflow_id, uidvalidity, uidnext))


async def remark(conn: asyncpg.Connection, source_id: int, workflow_id: str, uidvalidity: int,
                 uidnext: int) -> None:
    """The mailbox was renumbered (a new UIDVALIDITY) between two attempts of one night."""
    await conn.execute("UPDATE source_marks SET uidvalidity = $3, uidnext = $4"
                       " WHERE source_id = $1 AND workflow_id = $2",
                       source_id, workflow_id, uidvalidity, uidnext)


async def last_uid(conn: asyncpg.Connection, source_id: int, uidvalidity: int) -> int:
    """The highest UID of this mailbox generation any night has recorded (0: none)."""
    return await conn.fetchval(
        "SELECT coalesce(max(uid), 0) FROM source_items WHERE source_id = $1 AND uidvalidity = $2",
        source_id, uidvalidity)


# ------------------------------------------------------------------ files
async def known_files(conn: asyncpg.Connection, source_id: int) -> set[tuple[str, str]]:
    """(sha256, name) of every file this source has claimed, whatever became of it."""
    rows = await conn.fetch("SELECT sha256, name FROM source_items WHERE source_id = $1"
                            " AND sha256 IS NOT NULL", source_id)
    return {(r["sha256"], r["name"]) for r in rows}


async def claim_files(conn: asyncpg.Connection, source_id: int, workflow_id: str,
                      files: Sequence[tuple[str, str]]) -> int:
    """The night's set: each (sha256, name) not claimed before becomes a pending item of it."""
    if not files:
        return 0
    result = await conn.execute(
        "INSERT INTO source_items (source_id, workflow_id, sha256, name)"
        " SELECT $1, $2, f.sha, f.name FROM unnest($3::text[], $4::text[]) AS f (sha, name)"
        " ON CONFLICT DO NOTHING",
        source_id, workflow_id, [f[0] for f in files], [f[1] for f in files])
    return int(result.split()[-1])


async def pending(conn: asyncpg.Connection, source_id: int, workflow_id: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT id, sha256, name FROM source_items WHERE source_id = $1 AND workflow_id = $2"
        " AND outcome = 'pending' ORDER BY name, id", source_id, workflow_id)


async def settle(conn: asyncpg.Connection, item_id: int, outcome: str, reason: str = "",
                 documents: int = 0) -> bool:
    """Record what became of a pending item; False if it was settled already (by an attempt that
    committed before this one: then the caller's transaction must not commit its import)."""
    return bool(await conn.fetchval(
        "UPDATE source_items SET outcome = $2, reason = $3, documents = $4, recorded_at = now()"
        " WHERE id = $1 AND outcome = 'pending' RETURNING true", item_id, outcome, reason[:2000],
        documents))


# ------------------------------------------------------------------ messages
async def record_message(conn: asyncpg.Connection, source_id: int, workflow_id: str,
                         uidvalidity: int, uid: int, message_id: str, name: str, outcome: str,
                         reason: str, documents: int) -> bool:
    """False when this message (by UID or by Message-ID) is recorded already."""
    return bool(await conn.fetchval(
        "INSERT INTO source_items (source_id, workflow_id, uidvalidity, uid, message_id, name,"
        " outcome, reason, documents) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        " ON CONFLICT DO NOTHING RETURNING true",
        source_id, workflow_id, uidvalidity, uid, message_id, name, outcome, reason[:2000],
        documents))


async def known_message_ids(conn: asyncpg.Connection, source_id: int,
                            message_ids: Sequence[str]) -> set[str]:
    rows = await conn.fetch("SELECT message_id FROM source_items WHERE source_id = $1"
                            " AND message_id = ANY($2::text[])", source_id, list(message_ids))
    return {r["message_id"] for r in rows}


async def to_move(conn: asyncpg.Connection, source_id: int, uidvalidity: int) -> list[int]:
    """UIDs of this mailbox generation's filed messages not yet moved (recorded, so committed)."""
    rows = await conn.fetch(
        "SELECT uid FROM source_items WHERE source_id = $1 AND uidvalidity = $2 AND outcome = 'filed'"
        " AND uid IS NOT NULL AND moved_to IS NULL ORDER BY uid", source_id, uidvalidity)
    return [r["uid"] for r in rows]


async def moved(conn: asyncpg.Connection, source_id: int, uidvalidity: int, uids: Sequence[int],
                folder: str) -> None:
    await conn.execute(
        "UPDATE source_items SET moved_to = $4 WHERE source_id = $1 AND uidvalidity = $2"
        " AND uid = ANY($3::bigint[]) AND moved_to IS NULL", source_id, uidvalidity, sorted(uids), folder)


# ------------------------------------------------------------------ what a night took
async def night_counts(pool: asyncpg.Pool, workflow_id: str) -> list[asyncpg.Record]:
    """Per source: how many items the night imported, filed, loaded, and left pending."""
    return await pool.fetch(
        "SELECT s.id, s.kind, s.url,"
        " count(*) FILTER (WHERE i.outcome = 'imported') AS imported,"
        " count(*) FILTER (WHERE i.outcome = 'filed') AS filed,"
        " count(*) FILTER (WHERE i.outcome = 'loaded') AS loaded,"
        " count(*) FILTER (WHERE i.outcome = 'pending') AS pending,"
        " coalesce(sum(i.documents), 0) AS documents"
        " FROM source_items i JOIN sources s ON s.id = i.source_id"
        " WHERE i.workflow_id = $1 GROUP BY s.id, s.kind, s.url ORDER BY s.id", workflow_id)


async def night_filed(pool: asyncpg.Pool, workflow_id: str, limit: int = 20) -> list[asyncpg.Record]:
    return await pool.fetch(
        "SELECT source_id, name, reason, moved_to FROM source_items WHERE workflow_id = $1"
        " AND outcome = 'filed' ORDER BY id LIMIT $2", workflow_id, limit)


async def lock_source(conn: asyncpg.Connection, source_id: int) -> None:
    """One writer per source until the transaction ends: a stale attempt and the live one of a
    night never take the same item twice (the second sees the first's row)."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext('source:' || $1::bigint))", source_id)


async def item_known(conn: asyncpg.Connection, source_id: int, uidvalidity: int, uid: int,
                     message_id: str) -> bool:
    return bool(await conn.fetchval(
        "SELECT true FROM source_items WHERE source_id = $1 AND ((uidvalidity = $2 AND uid = $3)"
        " OR message_id = $4) LIMIT 1", source_id, uidvalidity, uid, message_id))


async def still_pending(conn: asyncpg.Connection, item_id: int) -> bool:
    return bool(await conn.fetchval(
        "SELECT true FROM source_items WHERE id = $1 AND outcome = 'pending'", item_id))


async def for_warehouse(conn: asyncpg.Connection | asyncpg.Pool, warehouse: str) -> list[asyncpg.Record]:
    """The night's sources: ERP exports first (the invoices name suppliers and POs they load),
    then drop folders, then mailboxes; each kind in the order they were added."""
    return await conn.fetch(
        "SELECT id, warehouse, kind, url, settings::text AS settings, secret_ref FROM sources"
        " WHERE warehouse = $1 ORDER BY array_position(ARRAY['erp', 'folder', 'imap'], kind), id",
        warehouse)
