"""Approvers: the people whose signed decisions and requests a run takes.

The table is the trust root of decisions (docs/design.md §3, "Signed decisions"): a decision
counts only if it is signed by a key on record here for an active approver. Rows are never
deleted; revoking sets `active = false` and `revoked_at` (a CHECK keeps the two together).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg


@dataclass(frozen=True)
class Approver:
    name: str
    email: str
    role: str
    public_key: bytes | None  # None: a passkey-only approver (recon/store/passkeys.py)
    limit_paise: int | None
    active: bool
    added_at: datetime
    revoked_at: datetime | None


def _approver(row: asyncpg.Record | None) -> Approver | None:
    return None if row is None else Approver(**dict(row))


_COLUMNS = "name, email, role, public_key, limit_paise, active, added_at, revoked_at"


async def add(conn: asyncpg.Connection | asyncpg.Pool, name: str, email: str, role: str,
              public_key: bytes | None, limit_paise: int | None) -> Approver | None:
    """Put an approver on record; None when the name or the key is already there."""
    return _approver(await conn.fetchrow(
        f"INSERT INTO approvers (name, email, role, public_key, limit_paise)"
        f" VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING {_COLUMNS}",
        name, email, role, public_key, limit_paise,
    ))


async def by_name(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> Approver | None:
    return _approver(await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM approvers WHERE name = $1", name))


async def by_key(conn: asyncpg.Connection | asyncpg.Pool, public_key: bytes) -> Approver | None:
    return _approver(await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM approvers WHERE public_key = $1", public_key))


async def all_approvers(conn: asyncpg.Connection | asyncpg.Pool) -> list[Approver]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM approvers ORDER BY active DESC, name")
    return [Approver(**dict(r)) for r in rows]


async def active_with_email(conn: asyncpg.Connection | asyncpg.Pool, email: str) -> str | None:
    """The active approver with this e-mail address, if any (one at most: migration 077)."""
    return await conn.fetchval(
        "SELECT name FROM approvers WHERE active AND lower(btrim(email)) = lower(btrim($1))", email)


async def active_admins(conn: asyncpg.Connection | asyncpg.Pool) -> int:
    return await conn.fetchval("SELECT count(*) FROM approvers WHERE active AND role = 'admin'")


async def revoke(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> datetime | None:
    """End an approver's authority now; None if there is no such active approver."""
    return await conn.fetchval(
        "UPDATE approvers SET active = false, revoked_at = now()"
        " WHERE name = $1 AND active RETURNING revoked_at", name)
