"""Steps 3-5 as statements over ranges of the run's invoices (`run_invoices.seq`, which follows
invoice number order): match lines to purchase orders, snapshot received stock, compare.

Each range is one transaction and one or two `INSERT ... SELECT` statements, so no row passes
through Python, a crash loses at most the range in flight, and the step's heartbeat can carry
the last committed range. Every insert is `ON CONFLICT DO NOTHING` on the row's natural key, so a
redo of a committed range adds nothing.

The ranges must be walked in order, each committed before the next starts (the activities do):
matching gives a PO line to the first line billing it in (invoice_no, line_no) order, and
comparisons are numbered in that order. Walking in order, "first in this range and not matched in
an earlier range" is the same line as "first in the whole run", and the comparison numbers
continue from the earlier ranges, so the result equals the one-statement fill for the whole run.
"""

from __future__ import annotations

import asyncpg

_LINES_IN_RANGE = """
    SELECT l.* FROM run_invoices r
    JOIN invoice_lines l ON l.workflow_id = r.workflow_id AND l.invoice_no = r.invoice_no
    WHERE r.workflow_id = $1 AND r.seq > $2 AND r.seq <= $3
"""

_MATCH = f"""
WITH lines AS ({_LINES_IN_RANGE}),
candidates AS (
    SELECT l.invoice_no, l.line_no, p.po_number, p.sku, p.unit_price_paise,
           row_number() OVER (PARTITION BY p.po_number, p.sku
                              ORDER BY l.invoice_no, l.line_no) AS nth
    FROM lines l
    JOIN purchase_orders o ON o.po_number = l.po_number AND o.supplier_id = l.supplier_id
    JOIN po_lines p ON p.po_number = l.po_number AND p.sku = l.sku
    WHERE NOT EXISTS (SELECT 1 FROM line_matches e
                      WHERE e.workflow_id = $1 AND e.po_number = p.po_number AND e.sku = p.sku
                        AND (e.invoice_no, e.line_no) < (l.invoice_no, l.line_no))
)
INSERT INTO line_matches (workflow_id, invoice_no, line_no, po_number, sku, po_price_paise)
SELECT $1, invoice_no, line_no, po_number, sku, unit_price_paise
FROM candidates WHERE nth = 1
ON CONFLICT DO NOTHING
"""

_PARK = f"""
WITH lines AS ({_LINES_IN_RANGE})
INSERT INTO parked_items (workflow_id, item_key, step, invoice_no, line_no, reason, evidence)
SELECT l.workflow_id, 'line:' || l.invoice_no || ':' || l.line_no, 'match_orders',
       l.invoice_no, l.line_no,
       CASE
         WHEN l.po_number IS NULL THEN 'invoice names no purchase order'
         WHEN o.po_number IS NULL THEN 'no purchase order ' || l.po_number
         WHEN o.supplier_id <> l.supplier_id
           THEN 'purchase order ' || l.po_number || ' belongs to ' || o.supplier_id
         WHEN p.sku IS NULL THEN 'SKU ' || l.sku || ' is not on ' || l.po_number
         ELSE 'PO line ' || l.po_number || '/' || l.sku || ' already billed in this run'
       END,
       l.qty || ' x ' || l.sku || ' (' || l.description || ') at '
           || l.unit_price_paise || ' paise'
FROM lines l
LEFT JOIN purchase_orders o ON o.po_number = l.po_number
LEFT JOIN po_lines p ON p.po_number = l.po_number AND p.sku = l.sku
WHERE NOT EXISTS (SELECT 1 FROM line_matches m WHERE m.workflow_id = $1
                  AND m.invoice_no = l.invoice_no AND m.line_no = l.line_no)
ON CONFLICT DO NOTHING
"""

# Receipts keep arriving during the night: each (PO, SKU) is read once, the first time a range
# needs it, and never again (its row is there on a redo).
_SNAPSHOT = f"""
WITH lines AS ({_LINES_IN_RANGE}),
wanted AS (
    SELECT DISTINCT m.po_number, m.sku
    FROM lines l
    JOIN line_matches m ON m.workflow_id = $1 AND m.invoice_no = l.invoice_no
                       AND m.line_no = l.line_no
    WHERE NOT EXISTS (SELECT 1 FROM stock_snapshots s WHERE s.workflow_id = $1
                      AND s.po_number = m.po_number AND s.sku = m.sku)
)
INSERT INTO stock_snapshots (workflow_id, po_number, sku, qty_received)
SELECT $1, w.po_number, w.sku, coalesce(sum(g.qty_received), 0)
FROM wanted w
LEFT JOIN goods_receipts g ON g.po_number = w.po_number AND g.sku = w.sku AND g.warehouse = $4
GROUP BY w.po_number, w.sku
ON CONFLICT DO NOTHING
"""

_COMPARE = f"""
WITH lines AS ({_LINES_IN_RANGE}),
done AS (SELECT coalesce(max(seq), 0) AS last FROM comparisons WHERE workflow_id = $1)
INSERT INTO comparisons (workflow_id, seq, invoice_no, line_no, supplier_id, sku,
                         invoiced_qty, received_qty, invoice_price_paise, po_price_paise)
SELECT $1, done.last + row_number() OVER (ORDER BY l.invoice_no, l.line_no), l.invoice_no,
       l.line_no, l.supplier_id, l.sku, l.qty, s.qty_received, l.unit_price_paise,
       m.po_price_paise
FROM lines l
CROSS JOIN done
JOIN line_matches m ON m.workflow_id = $1 AND m.invoice_no = l.invoice_no
                   AND m.line_no = l.line_no
JOIN stock_snapshots s ON s.workflow_id = $1 AND s.po_number = m.po_number AND s.sku = m.sku
WHERE NOT EXISTS (SELECT 1 FROM comparisons c WHERE c.workflow_id = $1
                  AND c.invoice_no = l.invoice_no AND c.line_no = l.line_no)
ON CONFLICT DO NOTHING
"""


async def last_invoice_seq(conn: asyncpg.Connection, workflow_id: str) -> int:
    return int(await conn.fetchval(
        "SELECT coalesce(max(seq), 0) FROM run_invoices WHERE workflow_id = $1", workflow_id))


async def _in_range(conn: asyncpg.Connection, workflow_id: str, *statements: tuple) -> None:
    """One transaction; one writer per run's working set at a time (racing attempts queue)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", workflow_id)
        for sql, *args in statements:
            await conn.execute(sql, workflow_id, *args)


async def match_range(conn: asyncpg.Connection, workflow_id: str, after: int, upto: int) -> None:
    """Step 3 for invoices after < seq <= upto: match what can be matched, park the rest."""
    await _in_range(conn, workflow_id, (_MATCH, after, upto), (_PARK, after, upto))


async def snapshot_range(
    conn: asyncpg.Connection, workflow_id: str, warehouse: str, after: int, upto: int
) -> None:
    """Step 4 for the matched lines of invoices after < seq <= upto."""
    await _in_range(conn, workflow_id, (_SNAPSHOT, after, upto, warehouse))


async def compare_range(conn: asyncpg.Connection, workflow_id: str, after: int, upto: int) -> None:
    """Step 5 for the matched lines of invoices after < seq <= upto, numbered after the last."""
    await _in_range(conn, workflow_id, (_COMPARE, after, upto))
