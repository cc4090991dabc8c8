"""Steps 3 and 4 in SQL: match lines to purchase orders (the night's own, and lines earlier
nights hold awaiting receipt), and snapshot what each PO line is weighed against: received to the
business date, ordered, and accepted by earlier nights (docs/design.md §12). Steps 5 and 6 are in
recon/store/weighing.py.

Each is set-based SQL over the run's working set, keyed by workflow id, and written so that
running it again (retry, reset, resume) finds its rows there and adds nothing.
"""

from __future__ import annotations

from datetime import date

import asyncpg

from recon.domain.keys import INVOICE_REF, PARKED_LINE, row_template
from recon.store.db import lock_run
from recon.store.held_lines import OPEN_HOLDS
from recon.store.lanes import in_lanes
from recon.store.units import restate_lines


async def match_orders(pool: asyncpg.Pool, workflow_id: str, business_date: date,
                       warehouse: str, date_window_days: int) -> tuple[int, int]:
    """Step 3: (lines matched, lines parked). A line whose PO does not exist, is another
    supplier's, or lacks the SKU is parked. So is every line of an invoice whose document states
    a date more than `date_window_days` from the business date, or before the order date of the
    PO the line cites (`_PARK_BY_DATE`): it is not matched, so nothing of it is weighed or posted.
    Several lines may bill one PO line (partial deliveries, several invoices per order): step 5
    weighs them together, in order. Lines that earlier nights of the warehouse hold awaiting
    receipt, and no night has claimed, are carried into this night's match with their own
    dates (the document's, and the night the bill came in). A line billed in another unit than
    its PO line's is restated in the PO's unit, or parked when no conversion is known
    (recon/store/units.py).

    Filled once, like steps 4-6: the step's mark (`lines_matched`, migration 072) commits with its
    matches and parked lines, so a run that has its mark has them all, and running the step again
    adds nothing. A large night matches its upper half of PO numbers on a second connection
    (recon/store/lanes.py), committed on its own: a retry that finds matches but no mark adds
    the missing ones. The first fill needs no `ON CONFLICT` (which doubled its cost: 1.2 s instead
    of 0.6 s for 246k lines); the primary key still refuses a second match of a line."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_run(conn, workflow_id)
        matched = await conn.fetchval(
            "SELECT lines FROM lines_matched WHERE workflow_id = $1", workflow_id)
        if matched is None:
            await _match_lines(conn, pool, workflow_id, business_date)
            await conn.execute(_PARK_BY_DATE, workflow_id, business_date, warehouse,
                               date_window_days, row_template(PARKED_LINE))
            await conn.execute(_DOCUMENT_DATES, workflow_id, business_date, warehouse,
                               row_template(INVOICE_REF))
            await restate_lines(conn, workflow_id)
            await conn.execute(_CARRY_HELD, workflow_id, warehouse, business_date)
            matched = await conn.fetchval(
                "INSERT INTO lines_matched (workflow_id, lines)"
                " SELECT $1, count(*) FROM line_matches WHERE workflow_id = $1 RETURNING lines",
                workflow_id)
        parked = await conn.fetchval(
            "SELECT count(*) FROM parked_items WHERE workflow_id = $1 AND step = 'match_orders'",
            workflow_id,
        )
    return int(matched), int(parked)


# The night's lines that cite an order of the range [$3, $4], by its supplier, and a SKU on it. The
# orders are read within the range of PO numbers the night's lines cite, as step 4 reads them (its
# comment says why); a line citing a number outside every order still parks.
_MATCH = """
INSERT INTO line_matches (workflow_id, invoice_no, line_no, po_number, sku, po_price_paise,
                          billed_night, po_price_exact)
SELECT $1, l.invoice_no, l.line_no, p.po_number, p.sku, p.unit_price_paise, $2, p.price_exact
FROM invoice_lines l
JOIN purchase_orders o ON o.po_number = l.po_number AND o.supplier_id = l.supplier_id
                      AND o.po_number BETWEEN $3 AND $4
JOIN po_lines p ON p.po_number = l.po_number AND p.sku = l.sku
               AND p.po_number BETWEEN $3 AND $4
WHERE l.workflow_id = $1
"""

# An attempt after one whose upper lane committed (or after a night matched before the step's
# mark existed) adds what is missing.
_MATCH_MISSING = _MATCH + "ON CONFLICT DO NOTHING\n"

# The range's hashes in memory; the night's lines and the range's orders read by index, never a
# scan of every night's lines (the statistics make a night a large share of a short history).
MATCH_SETTINGS = "SET LOCAL work_mem = '256MB'; SET LOCAL enable_seqscan = off"


async def _match_lines(conn: asyncpg.Connection, pool: asyncpg.Pool, workflow_id: str,
                       business_date: date) -> None:
    low, high, lines = await conn.fetchrow(
        "SELECT min(po_number), max(po_number), count(*) FROM invoice_lines"
        " WHERE workflow_id = $1", workflow_id)
    await conn.execute(MATCH_SETTINGS)
    begun = await conn.fetchval(
        "SELECT recon_night_has_rows('line_matches', $1)", workflow_id)
    if begun:
        await conn.execute(_MATCH_MISSING, workflow_id, business_date, low, high)
    else:
        async def lane(on: asyncpg.Connection, from_po: str, to_po: str) -> None:
            await on.execute(_MATCH, workflow_id, business_date, from_po, to_po)

        await in_lanes(conn, pool, lines, low, high, MATCH_SETTINGS, lane)
    # The lines left unmatched are few: each looks up its order by primary key (joined whole,
    # this hashed every order of every night to explain a few thousand lines).
    await conn.execute(
        """
        WITH unmatched AS MATERIALIZED (
            SELECT l.* FROM invoice_lines l
            WHERE l.workflow_id = $1
              AND NOT EXISTS (SELECT 1 FROM line_matches m WHERE m.workflow_id = $1
                              AND m.invoice_no = l.invoice_no AND m.line_no = l.line_no)
        )
        INSERT INTO parked_items (workflow_id, item_key, step, invoice_no, line_no, reason, evidence)
        SELECT l.workflow_id, format($2, l.invoice_no, l.line_no), 'match_orders',
               l.invoice_no, l.line_no,
               CASE
                 WHEN l.po_number IS NULL THEN 'invoice names no purchase order'
                 WHEN o.po_number IS NULL THEN 'no purchase order ' || l.po_number
                 WHEN o.supplier_id <> l.supplier_id
                   THEN 'purchase order ' || l.po_number || ' belongs to ' || o.supplier_id
                 ELSE 'SKU ' || l.sku || ' is not on ' || l.po_number
               END,
               l.qty || ' x ' || l.sku || ' (' || l.description || ') at '
                   || l.unit_price_paise || ' paise'
        FROM unmatched l
        LEFT JOIN LATERAL (SELECT o.po_number, o.supplier_id FROM purchase_orders o
                           WHERE o.po_number = l.po_number OFFSET 0) o ON true
        ON CONFLICT DO NOTHING
        """,
        workflow_id, row_template(PARKED_LINE),
    )


# The night's own invoices whose document states a date (an imported structured document:
# `invoices.issued_on`), checked against the business date ($2, within $4 days either way) and the
# order date of each line's PO: a line of an invoice out of the window, or dated before its order,
# is parked with both dates and its match removed (in the step's transaction, before its mark, so
# a retry that re-adds the match removes it again). Invoices that state no date are not checked.
_PARK_BY_DATE = """
WITH dated AS MATERIALIZED (
    SELECT format('%s:%s', i.supplier_id, i.invoice_no) AS ref, i.issued_on
    FROM invoices i
    WHERE i.business_date = $2 AND i.warehouse = $3 AND i.issued_on IS NOT NULL
      AND (i.issued_on < $2 - $4::int OR i.issued_on > $2 + $4::int
           OR EXISTS (SELECT 1 FROM purchase_orders o JOIN invoice_lines l
                      ON l.po_number = o.po_number
                      WHERE l.workflow_id = $1 AND l.invoice_no =
                            format('%s:%s', i.supplier_id, i.invoice_no)
                        AND o.ordered_on > i.issued_on))
), late AS (
    SELECT l.invoice_no, l.line_no, l.qty, l.sku, l.po_number, d.issued_on, o.ordered_on,
           CASE WHEN d.issued_on < $2 - $4::int OR d.issued_on > $2 + $4::int
                THEN 'invoice dated ' || d.issued_on || ', ' || abs(d.issued_on - $2)
                     || ' days from the business date ' || $2::date
                     || ' (RECON_INVOICE_DATE_WINDOW_DAYS ' || $4::int || ')'
                ELSE 'invoice dated ' || d.issued_on || ', before its purchase order '
                     || l.po_number || ' of ' || o.ordered_on
           END AS reason
    FROM dated d
    JOIN invoice_lines l ON l.workflow_id = $1 AND l.invoice_no = d.ref
    LEFT JOIN purchase_orders o ON o.po_number = l.po_number
), parked AS (
    INSERT INTO parked_items (workflow_id, item_key, step, invoice_no, line_no, reason, evidence)
    SELECT $1, format($5, invoice_no, line_no), 'match_orders', invoice_no, line_no, reason,
           'invoice date ' || issued_on || '; business date ' || $2::date
           || coalesce('; ' || po_number || ' ordered on ' || ordered_on, '')
           || '; ' || qty || ' x ' || sku
    FROM late
    ON CONFLICT (workflow_id, item_key) DO NOTHING
)
DELETE FROM line_matches m USING late p
WHERE m.workflow_id = $1 AND m.invoice_no = p.invoice_no AND m.line_no = p.line_no
  AND m.carried_from IS NULL
"""


# Each matched line of the night's own invoices takes its document's own date (`issued_on`, the
# supplier's): the HSN rate, the order of lines within a PO line and the debit note's "original
# invoice of" are read on it (migration 086). Only documents that state a date are touched (a
# text or PDF night updates nothing); a line carried from a hold brings its own (`_CARRY_HELD`).
# The dated documents are read once, first (MATERIALIZED): joined directly, the night's matches
# (estimated at one row: their statistics are refreshed after this step) drove a nested loop that
# read the night's 500 invoices once per matched line, to update nothing on a text night (34 ms of
# a 500-invoice night's ~180 ms of Postgres CPU; bench/pg_statements.py).
_DOCUMENT_DATES = """
WITH dated AS MATERIALIZED (
    SELECT format($4, i.supplier_id, i.invoice_no) AS ref, i.issued_on
    FROM invoices i
    WHERE i.business_date = $2 AND i.warehouse = $3 AND i.issued_on IS NOT NULL
)
UPDATE line_matches m SET issued_on = d.issued_on
FROM dated d
WHERE m.workflow_id = $1 AND m.invoice_no = d.ref AND m.carried_from IS NULL
"""


# Lines held awaiting receipt by earlier nights of the warehouse and claimed by no live
# acceptance: copied into this night's lines and matches, so steps 5-8 weigh, claim and book them
# like the night's own, under this night's keys. `carried_from` names the night the bill came in
# (the first night that held it: a night's id sorts by its date within a warehouse), where its
# fingerprint is (recon/store/weighing.py); every night that held it holds the same line.
_CARRY_HELD = """
WITH open_holds AS (""" + OPEN_HOLDS + """), carried AS (
    INSERT INTO invoice_lines (workflow_id, invoice_no, line_no, supplier_id, po_number, sku,
                               description, qty, unit_price_paise, price_exact)
    SELECT $1, invoice_no, line_no, supplier_id, po_number, sku, description, qty,
           unit_price_paise, price_exact
    FROM open_holds
    ON CONFLICT DO NOTHING
    RETURNING invoice_no, line_no
)
INSERT INTO line_matches (workflow_id, invoice_no, line_no, po_number, sku, po_price_paise,
                          billed_night, carried_from, po_price_exact, issued_on)
SELECT $1, h.invoice_no, h.line_no, h.po_number, h.sku, p.unit_price_paise, h.billed_night,
       h.workflow_id, p.price_exact, h.issued_on
FROM open_holds h
JOIN carried c ON c.invoice_no = h.invoice_no AND c.line_no = h.line_no
JOIN po_lines p ON p.po_number = h.po_number AND p.sku = h.sku
"""


async def read_stock(pool: asyncpg.Pool, workflow_id: str, warehouse: str,
                     business_date: date) -> int:
    """Step 4: per PO line the night bills, the snapshot it is weighed against, taken once:
    received to date (receipts dated on or before the business date, so what a night sees does
    not depend on when it ran), ordered, and accepted by the live acceptances of earlier nights.
    Returns its lines."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_run(conn, workflow_id)
        taken = await conn.fetchval(
            "SELECT lines FROM stock_snapshot_taken WHERE workflow_id = $1", workflow_id
        )
        if taken is not None:
            return int(taken)
        # The snapshot hashes the night's PO lines and sorts them (a 100k night: ~250k rows) in
        # memory, as step 5 does, each lane by a plan for its range.
        await conn.execute(SNAPSHOT_SETTINGS)
        await snapshot_missing(conn, workflow_id, warehouse, business_date, pool)
        lines = await conn.fetchval(  # a lane an earlier attempt committed counts too
            "SELECT count(*) FROM stock_snapshots WHERE workflow_id = $1", workflow_id)
        await conn.execute(
            "INSERT INTO stock_snapshot_taken (workflow_id, lines) VALUES ($1, $2)",
            workflow_id,
            lines,
        )
    return int(lines)


# Step 4's snapshot of the PO lines the night matched and has no snapshot of yet (all of them on
# a first run; the scope a redo forgot, when it weighs again). The order lines, receipts and live
# acceptances it sums are read within the night's range of PO numbers ($4-$5, by the index each
# table leads with `po_number`), never the whole table: joined whole, the step hashed every order
# line, receipt and acceptance of every earlier night (a 10k night on a month of history: 1.9-2.9
# s; within the range 0.2 s). PO numbers are issued in sequence, so the range spans the orders
# open tonight, not the years behind them; a night billing one very old order reads as much as
# the whole-table join did, never more. The range is also what a lane takes: the PO lines of a
# large night are taken in two lanes on two connections (recon/store/lanes.py), each its own
# range of PO numbers. The lane is chosen by the order lines it joins, not by filtering the night's matches:
# a range filter on `line_matches` is estimated as if PO number and night were independent (730
# rows of 12,000), and the plan then rescanned the receipts once per line (4.8 s, not 0.2 s).
_SNAPSHOT = """
WITH m AS (
    SELECT DISTINCT lm.po_number, lm.sku FROM line_matches lm
    WHERE lm.workflow_id = $1 AND NOT EXISTS (
        SELECT 1 FROM stock_snapshots s
        WHERE s.workflow_id = $1 AND s.po_number = lm.po_number AND s.sku = lm.sku)
), received AS (
    SELECT g.po_number, g.sku, sum(g.qty_received) AS qty
    FROM goods_receipts g
    WHERE g.po_number BETWEEN $4 AND $5 AND g.warehouse = $2 AND g.received_on <= $3
    GROUP BY g.po_number, g.sku
), prior AS (
    SELECT a.po_number, a.sku, sum(a.qty_accepted) AS qty
    FROM acceptances a
    WHERE a.warehouse = $2 AND a.po_number BETWEEN $4 AND $5 AND a.live
      AND a.business_date < $3 AND a.workflow_id <> $1
    GROUP BY a.po_number, a.sku
), snap AS (
    INSERT INTO stock_snapshots (workflow_id, po_number, sku, qty_received,
                                 qty_ordered, qty_prior)
    SELECT $1, m.po_number, m.sku, coalesce(r.qty, 0), p.qty_ordered,
           coalesce(a.qty, 0)
    FROM m
    JOIN po_lines p ON p.po_number = m.po_number AND p.sku = m.sku
                   AND p.po_number BETWEEN $4 AND $5
    LEFT JOIN received r ON r.po_number = m.po_number AND r.sku = m.sku
    LEFT JOIN prior a ON a.po_number = m.po_number AND a.sku = m.sku
    ORDER BY m.po_number, m.sku  -- key order: each insert lands beside the last
    RETURNING 1
)
SELECT count(*) FROM snap
"""


# Each lane sorts in memory, as step 5 does, and joins by hashing. The snapshot joins whole sets
# (the night's PO lines, the receipts and acceptances of its range), so hashing is right at any
# size; but its joins are estimated through the anti-join with the night's own snapshot rows, which
# is empty on a first run while the statistics still describe an earlier night's, and on some
# nights the planner then guessed one row and rescanned the receipts' aggregate once per PO line
# (5.1-5.6 s instead of 0.15 s for a 10k night; bench/README.md). Its inputs are read by index, as
# step 3's.
SNAPSHOT_SETTINGS = ("SET LOCAL work_mem = '256MB'; SET LOCAL enable_nestloop = off;"
                     " SET LOCAL enable_seqscan = off")


async def snapshot_missing(conn: asyncpg.Connection, workflow_id: str, warehouse: str,
                           business_date: date, pool: asyncpg.Pool | None = None) -> None:
    """The caller holds the run's lock and its transaction (and SNAPSHOT_SETTINGS). With a pool, a
    large night takes its upper half of PO numbers on a second connection meanwhile
    (recon/store/lanes.py): those snapshot rows are read by nobody before step 4 ends, and a
    retry takes only the ones missing."""
    # The range as values, not a subquery: the planner then knows how many rows it holds.
    low, high, lines = await conn.fetchrow(
        "SELECT min(po_number), max(po_number), count(*) FROM line_matches"
        " WHERE workflow_id = $1", workflow_id)
    if low is None:
        return

    async def lane(on: asyncpg.Connection, from_po: str, to_po: str) -> None:
        await on.fetchval(_SNAPSHOT, workflow_id, warehouse, business_date, from_po, to_po)

    await in_lanes(conn, pool, lines, low, high, SNAPSHOT_SETTINGS, lane)
