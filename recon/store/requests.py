"""Signed requests: their refusals, the signatures already spent, and the money a request moves.

Rules in docs/design.md §3 ("Signed requests", "One use per signature"). Nothing here decides:
the check (activities/requests.py, recon/mail/bounces.py) reads these and judges with
recon.domain.requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

from recon.domain.requests import KEPT_BY, KEPT_REASON, REDO, UNDO

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


@dataclass(frozen=True)
class Use:
    """What a verified use of a signature authorises, for the mandates (recon/store/mandates.py):
    the night it acts on, the night's generation when it was used, an undo's scope
    (`keys.undo_workflow_id`), a redo's or decision's supplier, what a decision decided and on
    which handover, and whether it was taken (not the first of two approvals)."""

    night: str
    generation: int
    scope: str | None = None
    supplier_id: str | None = None
    decision: str | None = None
    handover_no: int | None = None
    taken: bool = True
    park: tuple[str, ...] = ()  # the invoices a decision signed to leave out


async def spend(conn: Db, digest: bytes, *, purpose: str, run: str, target: str,
                signer: str, use: Use | None = None) -> tuple[str, datetime] | None:
    """Record the use of a signature. None: this is its first use, or the same use again; else
    (what it was used for, when): a second, different use. The same use is the same target in
    the same generation of the night (docs/design.md §3, "One use per signature"); for an undo,
    the same target before any redo of the night since (its own generation opened in between)."""
    u = use or Use(night="", generation=0)
    used_at = await conn.fetchval(
        "INSERT INTO spent_signatures (signature_sha256, purpose, run, target, signer, night,"
        " generation, scope, supplier_id, decision, handover_no, taken, park)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        " ON CONFLICT (signature_sha256) DO NOTHING RETURNING used_at",
        digest, purpose, run, target, signer, use and u.night, use and u.generation, u.scope,
        u.supplier_id, u.decision, u.handover_no, u.taken, list(u.park))
    if used_at is not None:
        return None
    row = await conn.fetchrow(
        "SELECT s.target, s.used_at, s.generation, s.purpose = $2 OR s.decision = 'undo' AS undo,"
        " EXISTS (SELECT 1 FROM spent_signatures r WHERE r.night = s.night"
        "         AND r.purpose = $3 AND r.generation > s.generation) AS redone"
        " FROM spent_signatures s WHERE s.signature_sha256 = $1", digest, UNDO, REDO)
    if row is None:
        return None
    if row["target"] != target:
        return row["target"], row["used_at"]
    if use is None or row["generation"] is None:
        return None
    if row["undo"]:
        if row["redone"]:
            return f"{row['target']}, before a redo of {use.night}", row["used_at"]
        return None
    if row["generation"] != use.generation:
        return f"{row['target']} in generation {row['generation']}", row["used_at"]
    return None


async def undo_stake(conn: Db, run: str, supplier_id: str | None,
                     references: list[str]) -> dict[str, int]:
    """What an undo reverses, per currency (minor units): the live ledger entries in its scope,
    absolute."""
    return {r["currency"]: min(int(r["total"]), _BIGINT_MAX) for r in await conn.fetch(
        "SELECT currency, sum(abs(amount_paise)) AS total FROM live_ledger_entries"
        " WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)"
        " AND ($3::text[] IS NULL OR reference = ANY($3)) GROUP BY currency",
        run, supplier_id, list(references) or None) if r["total"]}


# What a redo posts again: the open mismatches in scope with no live entry in any generation.
_REDO_STAKE = """
WITH g AS (SELECT recon_generation($1) AS n)
SELECT coalesce(s.currency, 'INR') AS currency, sum(abs(m.amount_paise)) AS total
FROM open_mismatches m CROSS JOIN g LEFT JOIN suppliers s ON s.supplier_id = m.supplier_id
WHERE m.workflow_id = $1 AND ($2::text IS NULL OR m.supplier_id = $2)
  AND NOT EXISTS (SELECT 1 FROM generate_series(1, g.n) AS gen
                  JOIN live_ledger_entries l ON l.reference = recon_key(m.reference, gen))
GROUP BY 1
"""


async def redo_stake(conn: Db, run: str, supplier_id: str | None) -> dict[str, int]:
    """What a redo posts again (absolute), per currency, as recon.store.undo.to_redo counts its
    rows."""
    return {r["currency"]: min(int(r["total"]), _BIGINT_MAX)
            for r in await conn.fetch(_REDO_STAKE, run, supplier_id) if r["total"]}
