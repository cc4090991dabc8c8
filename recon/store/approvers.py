"""Approvers, the refusals of their decisions, and the money a decision puts at stake.

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
    public_key: bytes
    limit_paise: int | None
    active: bool
    added_at: datetime
    revoked_at: datetime | None


def _approver(row: asyncpg.Record | None) -> Approver | None:
    return None if row is None else Approver(**dict(row))


_COLUMNS = "name, email, role, public_key, limit_paise, active, added_at, revoked_at"


async def add(conn: asyncpg.Connection | asyncpg.Pool, name: str, email: str, role: str,
              public_key: bytes, limit_paise: int | None) -> Approver | None:
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


async def active_admins(conn: asyncpg.Connection | asyncpg.Pool) -> int:
    return await conn.fetchval("SELECT count(*) FROM approvers WHERE active AND role = 'admin'")


async def revoke(conn: asyncpg.Connection | asyncpg.Pool, name: str) -> datetime | None:
    """End an approver's authority now; None if there is no such active approver."""
    return await conn.fetchval(
        "UPDATE approvers SET active = false, revoked_at = now()"
        " WHERE name = $1 AND active RETURNING revoked_at", name)


async def record_refusal(
    conn: asyncpg.Connection | asyncpg.Pool, *, check_id: str, workflow_id: str,
    handover_no: int, via: str, tried_by: str, signer: str | None, decision: str,
    park: list[str], stake_paise: int | None, reason: str, received_at: datetime,
) -> None:
    """Keep a refused decision on record; a retried check finds its row and adds none."""
    await conn.execute(
        "INSERT INTO refused_decisions (check_id, workflow_id, handover_no, via, tried_by,"
        " signer, decision, park, stake_paise, reason, received_at)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        " ON CONFLICT (check_id) DO NOTHING",
        check_id, workflow_id, handover_no, via, tried_by, signer, decision, park,
        stake_paise, reason, received_at,
    )


async def refusals_of(conn: asyncpg.Connection | asyncpg.Pool,
                      workflow_id: str) -> list[asyncpg.Record]:
    """A run's refused decisions in order (`recon handover RUN`)."""
    return await conn.fetch(
        "SELECT handover_no, via, tried_by, signer, decision, reason, received_at"
        " FROM refused_decisions WHERE workflow_id = $1 ORDER BY received_at, check_id",
        workflow_id)


# The debit notes a night would send, per supplier as step 9 computes them (the sum of the
# supplier's open mismatches, when positive), leaving out the invoices the decision parks; plus
# the size of what the decision parks (absolute amounts of those invoices' open mismatches).
_STAKE_OF_GOING_ON = """
WITH open_rows AS (
    SELECT supplier_id, invoice_no, amount_paise FROM open_mismatches
    WHERE workflow_id = $1 AND ($3::text IS NULL OR supplier_id = $3)
), owed AS (
    SELECT sum(amount_paise) AS total FROM open_rows
    WHERE invoice_no <> ALL($2::text[]) GROUP BY supplier_id
)
SELECT (SELECT coalesce(sum(total), 0) FROM owed WHERE total > 0)
     + (SELECT coalesce(sum(abs(amount_paise)), 0) FROM open_rows
        WHERE invoice_no = ANY($2::text[]))
"""

# An undo reverses every live entry of the night (or of the redo's supplier).
_STAKE_OF_UNDO = """
SELECT coalesce(sum(abs(amount_paise)), 0) FROM live_ledger_entries
WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)
"""

# bigint holds ±9.2e18 paise; a sum of many bigints is numeric in Postgres and may exceed it.
_BIGINT_MAX = 2**63 - 1


async def money_at_stake(conn: asyncpg.Connection | asyncpg.Pool, night: str,
                         supplier_id: str | None, decision: str, park: list[str]) -> int:
    """Paise a decision moves: for resume and retry, the debit notes it lets go out plus what it
    parks; for undo, the live ledger it reverses (docs/design.md §3)."""
    if decision == "undo":
        total = await conn.fetchval(_STAKE_OF_UNDO, night, supplier_id)
    else:
        total = await conn.fetchval(_STAKE_OF_GOING_ON, night, list(park), supplier_id)
    return min(int(total), _BIGINT_MAX)
