"""Compensation, SQL first. Nothing is deleted: every undo adds an opposite row that points at
the original (`reverses`), under the key `undo:{original key}`. A partial unique index allows one
reversal per original, so however often an undo runs, or whichever scopes overlap, each original
is reversed at most once.

The plan (what is still to reverse in a scope) is one query per store, used both by
`recon undo --dry-run` and by the undo workflow's activities. The redo's plan (what an undo left
to post again) is here too: it is the undo read the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import asyncpg

from recon.domain.keys import MOVEMENT, row_template, undo_key, withdrawal_key


@dataclass(frozen=True)
class Scope:
    run: str
    supplier_id: str | None = None
    references: tuple[str, ...] = ()

    def params(self) -> tuple[str, str | None, list[str] | None]:
        return self.run, self.supplier_id, list(self.references) or None


# $1 run, $2 supplier (or NULL), $3 references (or NULL)
_LEDGER = """
SELECT l.reference, l.invoice_no, l.supplier_id, l.line_no, l.amount_paise, l.currency
FROM ledger_entries l
WHERE l.workflow_id = $1 AND l.reverses IS NULL AND l.kind <> 'reversal'
  AND ($2::text IS NULL OR l.supplier_id = $2)
  AND ($3::text[] IS NULL OR l.reference = ANY($3))
  AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference)
ORDER BY l.posted_at DESC, l.reference DESC
"""

_STOCK = """
SELECT m.key, m.warehouse, m.sku, m.qty, m.supplier_id, m.invoice_no, m.line_no
FROM stock_movements m
WHERE m.workflow_id = $1 AND m.reverses IS NULL
  AND ($2::text IS NULL OR m.supplier_id = $2)
  AND ($3::text[] IS NULL OR EXISTS (
        SELECT 1 FROM ledger_entries l WHERE l.reference = ANY($3) AND l.workflow_id = $1
          AND l.invoice_no = m.invoice_no AND l.line_no = m.line_no))
  AND NOT EXISTS (SELECT 1 FROM stock_movements r WHERE r.reverses = m.key)
ORDER BY m.moved_at DESC, m.key DESC
"""

_NOTES = """
SELECT o.key, o.supplier_id, o.recipient, o.amount_paise, o.sent_at,
       coalesce((SELECT s.name FROM suppliers s WHERE s.supplier_id = o.supplier_id), o.supplier_id)
           AS supplier_name,
       coalesce((SELECT s.currency FROM suppliers s WHERE s.supplier_id = o.supplier_id), 'INR')
           AS currency
FROM outbox o
WHERE o.workflow_id = $1 AND o.kind = 'debit-note'
  AND ($2::text IS NULL OR o.supplier_id = $2)
  AND ($3::text[] IS NULL OR EXISTS (
        SELECT 1 FROM ledger_entries l WHERE l.reference = ANY($3) AND l.workflow_id = $1
          AND l.supplier_id = o.supplier_id))
ORDER BY o.created_at DESC, o.key DESC
"""


@dataclass
class UndoPlan:
    ledger: list[asyncpg.Record] = field(default_factory=list)
    stock: list[asyncpg.Record] = field(default_factory=list)
    notes: list[asyncpg.Record] = field(default_factory=list)

    @property
    def ledger_paise(self) -> int:
        return sum(r["amount_paise"] for r in self.ledger)

    @property
    def ledger_by_currency(self) -> dict[str, int]:
        """The entries' sum per currency (two currencies are never added)."""
        sums: dict[str, int] = {}
        for r in self.ledger:
            sums[r["currency"]] = sums.get(r["currency"], 0) + r["amount_paise"]
        return sums

    @property
    def empty(self) -> bool:
        return not (self.ledger or self.stock or self.notes)


async def reversed_paise(conn: asyncpg.Connection | asyncpg.Pool, scope: Scope) -> int:
    """What the reversals of the scope's originals add up to in ₹, as a positive amount: every
    reversal on record, whichever undo wrote it (other currencies: `reversed_by_currency`)."""
    return int(await conn.fetchval(
        "SELECT coalesce(-sum(r.amount_paise), 0) FROM ledger_entries r"
        " JOIN ledger_entries o ON o.reference = r.reverses"
        " WHERE r.currency = 'INR' AND o.workflow_id = $1 AND ($2::text IS NULL OR o.supplier_id = $2)"
        " AND ($3::text[] IS NULL OR o.reference = ANY($3))",
        *scope.params(),
    ))


async def reversed_by_currency(conn: asyncpg.Connection | asyncpg.Pool,
                               scope: Scope) -> dict[str, int]:
    """`reversed_paise` per currency, as `recon undo` reports it (never one sum of two)."""
    return {r["currency"]: int(r["total"]) for r in await conn.fetch(
        "SELECT r.currency, -sum(r.amount_paise) AS total FROM ledger_entries r"
        " JOIN ledger_entries o ON o.reference = r.reverses"
        " WHERE o.workflow_id = $1 AND ($2::text IS NULL OR o.supplier_id = $2)"
        " AND ($3::text[] IS NULL OR o.reference = ANY($3)) GROUP BY r.currency",
        *scope.params(),
    )}


async def plan_undo(conn: asyncpg.Pool | asyncpg.Connection, scope: Scope) -> UndoPlan:
    params = scope.params()
    notes = await conn.fetch(_NOTES, *params)
    pending_notes = []
    for note in notes:
        done = await conn.fetchval(
            "SELECT 1 FROM outbox WHERE key = $1", withdrawal_key(note["key"], scope.references)
        )
        whole_done = await conn.fetchval(
            "SELECT 1 FROM outbox WHERE key = $1", undo_key(note["key"])
        )
        if not done and not whole_done:
            pending_notes.append(note)
    return UndoPlan(
        ledger=list(await conn.fetch(_LEDGER, *params)),
        stock=list(await conn.fetch(_STOCK, *params)),
        notes=pending_notes,
    )


# What is still to post again in scope: open mismatches with no live entry in any generation,
# open lines with no live stock movement, suppliers owed a note with no live note.
_TO_REDO = """
WITH g AS (SELECT recon_generation($1) AS n)
SELECT
  (SELECT count(*) FROM open_mismatches m, g
    WHERE m.workflow_id = $1 AND ($2::text IS NULL OR m.supplier_id = $2)
      AND NOT EXISTS (SELECT 1 FROM generate_series(1, g.n) AS gen
                      JOIN live_ledger_entries l ON l.reference = recon_key(m.reference, gen)))
      AS ledger,
  (SELECT count(*) FROM open_comparisons c, g
    WHERE c.workflow_id = $1 AND ($2::text IS NULL OR c.supplier_id = $2)
      AND NOT EXISTS (SELECT 1 FROM generate_series(1, g.n) AS gen
                      JOIN live_stock_movements s
                        ON s.key = recon_key(format($3, c.invoice_no, c.line_no),
                                             gen))) AS stock,
  (SELECT n FROM g) AS generation,
  (SELECT count(*) FROM mismatches WHERE workflow_id = $1) AS flagged,
  (SELECT count(*) FROM comparisons WHERE workflow_id = $1) AS compared
"""


async def to_redo(conn: asyncpg.Pool | asyncpg.Connection, run: str,
                  supplier_id: str | None) -> asyncpg.Record:
    """ledger, stock (rows a redo would post again), generation, flagged, compared."""
    return await conn.fetchrow(_TO_REDO, run, supplier_id,
                               row_template(MOVEMENT, workflow_id=run))


async def supplier_in_night(conn: asyncpg.Pool | asyncpg.Connection, run: str,
                            supplier_id: str) -> bool:
    """Did the night flag or compare anything of this supplier?"""
    return bool(await conn.fetchval(
        "SELECT 1 FROM mismatches WHERE workflow_id = $1 AND supplier_id = $2"
        " UNION ALL SELECT 1 FROM comparisons WHERE workflow_id = $1 AND supplier_id = $2",
        run, supplier_id,
    ))


async def reversal_keys(conn: asyncpg.Pool | asyncpg.Connection, scope: Scope) -> list[str]:
    """The keys of every reversal on record of the scope's originals (a retried undo's too)."""
    rows = await conn.fetch(
        "SELECT r.reference FROM ledger_entries r JOIN ledger_entries o ON o.reference = r.reverses"
        " WHERE o.workflow_id = $1 AND ($2::text IS NULL OR o.supplier_id = $2)"
        " AND ($3::text[] IS NULL OR o.reference = ANY($3)) ORDER BY r.reference",
        *scope.params())
    return [r["reference"] for r in rows]


async def suppliers_of_night(conn: asyncpg.Pool | asyncpg.Connection, run: str) -> list[asyncpg.Record]:
    """Each supplier the night flagged or compared, with its forward ledger entries still live
    and those undone (reversed): what the desk offers to undo or redo per supplier."""
    return await conn.fetch(
        "SELECT s.supplier_id, coalesce(sp.name, s.supplier_id) AS name,"
        " (SELECT count(*) FROM ledger_entries l WHERE l.workflow_id = $1"
        "    AND l.supplier_id = s.supplier_id AND l.reverses IS NULL AND l.kind <> 'reversal'"
        "    AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference))"
        "   AS live,"
        " (SELECT count(*) FROM ledger_entries l WHERE l.workflow_id = $1"
        "    AND l.supplier_id = s.supplier_id AND l.reverses IS NULL AND l.kind <> 'reversal'"
        "    AND EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference))"
        "   AS undone"
        " FROM (SELECT supplier_id FROM mismatches WHERE workflow_id = $1"
        "       UNION SELECT supplier_id FROM comparisons WHERE workflow_id = $1) s"
        " LEFT JOIN suppliers sp ON sp.supplier_id = s.supplier_id ORDER BY s.supplier_id", run)
