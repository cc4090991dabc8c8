"""Signed requests: their refusals, the signatures already spent, and the money a request moves.

Rules in docs/design.md §3 ("Signed requests", "One use per signature"). Nothing here decides:
the check (activities/requests.py, recon/mail/bounces.py) reads these and judges with
recon.domain.requests.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from recon.domain.requests import KEPT_BY, KEPT_REASON

Db = asyncpg.Connection | asyncpg.Pool

# bigint holds ±9.2e18 paise; a sum of many bigints is numeric in Postgres and may exceed it.
_BIGINT_MAX = 2**63 - 1


async def clock(conn: Db) -> datetime:
    """Postgres's time: what a request checked outside a workflow is judged against (the
    database's clock, not the clock of whoever signed)."""
    return await conn.fetchval("SELECT now()")


async def record_refusal(conn: Db, *, check_id: str, purpose: str, run: str, target: str,
                         tried_by: str, signer: str | None, stake_paise: int | None,
                         reason: str, received_at: datetime) -> None:
    """Keep a refused request on record; a retried check finds its row and adds none."""
    await conn.execute(
        "INSERT INTO refused_requests (check_id, purpose, run, target, tried_by, signer,"
        " stake_paise, reason, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        " ON CONFLICT (check_id) DO NOTHING",
        check_id, purpose, run[:200], target[:300], tried_by[:KEPT_BY], signer, stake_paise,
        reason[:KEPT_REASON * 2], received_at,
    )


async def refusals_of(conn: Db, run: str) -> list[asyncpg.Record]:
    """A night's refused requests, oldest first (`recon handover RUN`)."""
    return await conn.fetch(
        "SELECT purpose, target, tried_by, signer, reason, received_at FROM refused_requests"
        " WHERE run = $1 ORDER BY received_at, check_id", run)


async def spend(conn: Db, digest: bytes, *, purpose: str, run: str, target: str,
                signer: str) -> tuple[str, datetime] | None:
    """Record the use of a signature. None: this is its first use, or the same use again (the
    same target); else (what it was used for, when): a second, different use."""
    used_at = await conn.fetchval(
        "INSERT INTO spent_signatures (signature_sha256, purpose, run, target, signer)"
        " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (signature_sha256) DO NOTHING"
        " RETURNING used_at", digest, purpose, run, target, signer)
    if used_at is not None:
        return None
    row = await conn.fetchrow(
        "SELECT target, used_at FROM spent_signatures WHERE signature_sha256 = $1", digest)
    if row is None or row["target"] == target:
        return None
    return row["target"], row["used_at"]


async def undo_stake(conn: Db, run: str, supplier_id: str | None, references: list[str]) -> int:
    """Paise an undo reverses: the live ledger entries in its scope, absolute."""
    total = await conn.fetchval(
        "SELECT coalesce(sum(abs(amount_paise)), 0) FROM live_ledger_entries"
        " WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)"
        " AND ($3::text[] IS NULL OR reference = ANY($3))",
        run, supplier_id, list(references) or None)
    return min(int(total), _BIGINT_MAX)


# What a redo posts again: the open mismatches in scope with no live entry in any generation.
_REDO_STAKE = """
WITH g AS (SELECT recon_generation($1) AS n)
SELECT coalesce(sum(abs(m.amount_paise)), 0) FROM open_mismatches m, g
WHERE m.workflow_id = $1 AND ($2::text IS NULL OR m.supplier_id = $2)
  AND NOT EXISTS (SELECT 1 FROM generate_series(1, g.n) AS gen
                  JOIN live_ledger_entries l ON l.reference = recon_key(m.reference, gen))
"""


async def redo_stake(conn: Db, run: str, supplier_id: str | None) -> int:
    """Paise a redo posts again (absolute), as recon.store.undo.to_redo counts its rows."""
    return min(int(await conn.fetchval(_REDO_STAKE, run, supplier_id)), _BIGINT_MAX)
