"""Stock movements: one row per key, and the stock level moves only for rows that were new.

The movement insert and the level update are one statement, so a redo of a committed batch
conflicts on every key and moves no stock a second time.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from recon.domain.errors import KeyPayloadConflict, StaleAttempt, VerificationFailed
from recon.domain.keys import MOVEMENT, row_template
from recon.store.fences import Fence


def _movement_keys(workflow_id: str) -> str:
    """The run's movement key shape as a `format()` template: `format(t, invoice_no, line_no)`
    in SQL is `keys.movement_key` in Python (docs/design.md §1)."""
    return row_template(MOVEMENT, workflow_id=workflow_id)


@dataclass(frozen=True)
class StockMovement:
    key: str
    workflow_id: str
    warehouse: str
    sku: str
    qty: int
    supplier_id: str
    invoice_no: str
    line_no: int | None
    note: str
    reverses: str | None = None


# Both booking statements end with this CTE: the level moves only by the rows `moved` inserted
# (a redo that conflicts on every key moves nothing), and rows are locked in key order, so
# concurrent bookings (two lanes of step 8, two nights of one warehouse, an undo) wait for each
# other instead of deadlocking.
#
# The lock order, all of it: a booking first inserts its movements in movement-key order (each
# insert takes its key; both statements say `ORDER BY key COLLATE "C"`, so a plan cannot reorder
# them and the two statements agree), and only then its levels in (warehouse, sku) order: the
# GROUP BY consumes every row `moved` returns before the first level is written (a seed writing
# levels sorts its rows the same way: recon/store/seeding.py). A level lock is
# so only ever held by a booking past its last movement, which waits for no movement key: no
# cycle, whatever two bookings overlap in.
_LEVELS_BY_NEW_ROWS = """levels AS (
    INSERT INTO stock_levels AS lv (warehouse, sku, qty_on_hand)
    SELECT warehouse, sku, sum(qty) FROM moved GROUP BY warehouse, sku
    ORDER BY warehouse COLLATE "C", sku COLLATE "C"
    ON CONFLICT (warehouse, sku) DO UPDATE SET qty_on_hand = lv.qty_on_hand + EXCLUDED.qty_on_hand
)
"""

_MOVE = """
WITH moved AS (
    INSERT INTO stock_movements
        (key, workflow_id, warehouse, sku, qty, supplier_id, invoice_no, line_no, note, reverses,
         fence_token)
    SELECT k, w, h, s, q, p, i, l, n, v, $11
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[],
                $7::text[], $8::int[], $9::text[], $10::text[]) AS x(k, w, h, s, q, p, i, l, n, v)
    ORDER BY k COLLATE "C"
    ON CONFLICT (key) DO NOTHING
    RETURNING warehouse, sku, qty
), """ + _LEVELS_BY_NEW_ROWS + """SELECT count(*) FROM moved
"""

_DIFFERENT = """
SELECT m.key, m.qty, x.q AS wanted
FROM unnest($1::text[], $2::int[], $3::text[]) AS x(k, q, s)
JOIN stock_movements m ON m.key = x.k
WHERE m.qty <> x.q OR m.sku <> x.s
"""


async def move_stock(
    conn: asyncpg.Connection, moves: list[StockMovement], fence: Fence | None = None
) -> int:
    if not moves:
        return 0
    cols = list(zip(*[
        (m.key, m.workflow_id, m.warehouse, m.sku, m.qty, m.supplier_id, m.invoice_no, m.line_no,
         m.note, m.reverses)
        for m in moves
    ], strict=True))
    async with conn.transaction():
        if fence is not None:
            await fence.check(conn)
        inserted = await conn.fetchval(_MOVE, *[list(c) for c in cols],
                                       fence.token if fence else None)
        if inserted < len(moves):
            different = await conn.fetch(
                _DIFFERENT, [m.key for m in moves], [m.qty for m in moves], [m.sku for m in moves]
            )
            if different:
                row = different[0]
                raise KeyPayloadConflict(
                    f"stock key {row['key']} already moved {row['qty']}, "
                    f"this attempt wanted {row['wanted']}"
                )
    return int(inserted)


_VERIFY = """
WITH g AS (SELECT recon_generation($1) AS n),
c AS (
    SELECT format($3, c.invoice_no, c.line_no) AS base, c.received_qty
    FROM open_comparisons c
    WHERE c.workflow_id = $1 AND ($2::text IS NULL OR c.supplier_id = $2)
),
live AS (
    SELECT c.base, count(m.key) AS n,
           count(*) FILTER (WHERE m.qty <> c.received_qty) AS different
    FROM c CROSS JOIN g CROSS JOIN LATERAL generate_series(1, g.n) AS gen
    LEFT JOIN live_stock_movements m ON m.key = recon_key(c.base, gen)
    GROUP BY c.base
)
SELECT (SELECT count(*) FROM c) AS expected,
       (SELECT count(*) FROM live WHERE n = 0) AS missing,
       (SELECT count(*) FROM live WHERE n > 1) AS doubled,
       (SELECT count(*) FROM live WHERE different > 0) AS different
"""


# A night nothing was ever undone in has no reversal and one generation: every movement is live
# and its key is the base key, so one join says it (the usual case, and the big one: a 100k night
# has about 250k lines). The night's movements are its own rows (`workflow_id`, by index): joined
# with the whole table, the check hashed every movement of every night (1 s for a 10k night on a
# month of history, twice a night).
_VERIFY_NEVER_UNDONE = """
SELECT count(*) AS expected,
       count(*) FILTER (WHERE m.key IS NULL) AS missing,
       0 AS doubled,
       count(*) FILTER (WHERE m.qty <> c.received_qty) AS different
FROM open_comparisons c
LEFT JOIN (SELECT key, qty FROM stock_movements WHERE workflow_id = $1) m
       ON m.key = format($3, c.invoice_no, c.line_no)
WHERE c.workflow_id = $1 AND ($2::text IS NULL OR c.supplier_id = $2)
"""


async def verify_movements(
    conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str, supplier_id: str | None = None
) -> int:
    """Every open reconciled line has exactly one live movement (not reversed) of its quantity."""
    from recon.store.ledger import ever_undone

    query = _VERIFY if await ever_undone(conn, workflow_id) else _VERIFY_NEVER_UNDONE
    row = await conn.fetchrow(query, workflow_id, supplier_id, _movement_keys(workflow_id))
    if row["missing"] or row["different"] or row["doubled"]:
        raise VerificationFailed(
            f"stock check for {workflow_id}"
            + (f" (supplier {supplier_id})" if supplier_id else "")
            + f": {row['missing']} missing, {row['different']} with a different quantity, "
            f"{row['doubled']} booked twice, of {row['expected']} expected "
            "(reversed movements do not count)"
        )
    return int(row["expected"])


# ------------------------------------------------------------------ step 8, set-based
# One statement books a seq range of the run's comparisons: no row passes through Python. The
# fence is checked inside the statement (FOR SHARE: an attempt taking the fence over waits for this
# one to commit; a stale token joins no row, so nothing is written), keys collide as in
# `move_stock`, and the level moves only by the rows that were new.
_MOVE_RANGE = """
WITH fence AS (
    SELECT token FROM fences WHERE scope = $5 AND token = $6 FOR SHARE
), wanted AS (
    -- Open lines (not parked by a decision) in scope ($8 supplier or NULL) that have no live
    -- movement in any generation, booked under the current generation's key ($7).
    SELECT recon_key(format($10, c.invoice_no, c.line_no), $7) AS key, c.sku,
           c.received_qty, c.supplier_id, c.invoice_no, c.line_no
    FROM open_comparisons c
    WHERE c.workflow_id = $1 AND c.seq > $2 AND c.seq <= $3
      AND ($8::text IS NULL OR c.supplier_id = $8)
      AND (NOT $9::bool OR NOT EXISTS (
          SELECT 1 FROM generate_series(1, $7) AS gen
          JOIN live_stock_movements l
            ON l.key = recon_key(format($10, c.invoice_no, c.line_no), gen)))
), moved AS (
    INSERT INTO stock_movements
        (key, workflow_id, warehouse, sku, qty, supplier_id, invoice_no, line_no, note, reverses,
         fence_token)
    SELECT w.key, $1, $4, w.sku, w.received_qty, w.supplier_id, w.invoice_no, w.line_no,
           'received against ' || w.invoice_no || ' line ' || w.line_no || ', reconciled', NULL,
           f.token
    FROM wanted w CROSS JOIN fence f
    ORDER BY w.key COLLATE "C"
    ON CONFLICT (key) DO NOTHING
    RETURNING warehouse, sku, qty
), """ + _LEVELS_BY_NEW_ROWS + """SELECT (SELECT count(*) FROM fence) AS fenced,
       (SELECT count(*) FROM wanted) AS wanted, (SELECT count(*) FROM moved) AS inserted
"""

_DIFFERENT_IN_RANGE = """
SELECT m.key, m.qty, c.received_qty AS wanted
FROM comparisons c
JOIN stock_movements m ON m.key = recon_key(format($6, c.invoice_no, c.line_no), $5)
WHERE c.workflow_id = $1 AND c.seq > $2 AND c.seq <= $3
  AND (m.qty <> c.received_qty OR m.sku <> c.sku OR m.warehouse <> $4)
LIMIT 1
"""


@dataclass(frozen=True)
class RangeMoved:
    wanted: int
    inserted: int


async def move_reconciled_range(
    conn: asyncpg.Connection, workflow_id: str, warehouse: str, after_seq: int, last_seq: int,
    fence: Fence, generation: int = 1, supplier_id: str | None = None, undone: bool = True,
) -> RangeMoved:
    """Book comparisons with `after_seq < seq <= last_seq` in one transaction. A redo of a
    committed range conflicts on every key and moves nothing; a key already holding a different
    quantity is a bug and fails loudly, as in `move_stock`."""
    async with conn.transaction():
        await fence.check_mandate(conn)
        row = await conn.fetchrow(_MOVE_RANGE, workflow_id, after_seq, last_seq, warehouse,
                                  fence.scope, fence.token, generation, supplier_id, undone,
                                  _movement_keys(workflow_id))
        if not row["fenced"]:
            await fence.check(conn)  # raises StaleAttempt with the newest token in its message
            raise StaleAttempt(f"fencing token {fence.token} for {fence.scope} was refused")
        if row["inserted"] < row["wanted"]:
            different = await conn.fetchrow(_DIFFERENT_IN_RANGE, workflow_id, after_seq, last_seq,
                                            warehouse, generation, _movement_keys(workflow_id))
            if different:
                raise KeyPayloadConflict(
                    f"stock key {different['key']} already moved {different['qty']}, "
                    f"this attempt wanted {different['wanted']}"
                )
    return RangeMoved(wanted=int(row["wanted"]), inserted=int(row["inserted"]))
