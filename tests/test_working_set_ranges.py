"""Steps 3-5 by ranges of invoices (recon.working_set) give exactly the rows the one-statement
fill over the whole run gave before (kept below as the reference), including a PO line billed
twice across a range boundary, and a redo of every range adds nothing."""

from __future__ import annotations

from datetime import date

import asyncpg

from recon.extraction.offline import parse_document
from recon.extraction.schema import UnreadableInvoice
from recon.seed import seed_night
from recon.working_set import compare_range, last_invoice_seq, match_range, snapshot_range

# ------------------------------------------------ the whole-run statements steps 3-5 ran before
_OLD_MATCH = """
WITH candidates AS (
    SELECT l.invoice_no, l.line_no, p.po_number, p.sku, p.unit_price_paise,
           row_number() OVER (PARTITION BY p.po_number, p.sku
                              ORDER BY l.invoice_no, l.line_no) AS nth
    FROM invoice_lines l
    JOIN purchase_orders o ON o.po_number = l.po_number AND o.supplier_id = l.supplier_id
    JOIN po_lines p ON p.po_number = l.po_number AND p.sku = l.sku
    WHERE l.workflow_id = $1
)
INSERT INTO line_matches (workflow_id, invoice_no, line_no, po_number, sku, po_price_paise)
SELECT $1, invoice_no, line_no, po_number, sku, unit_price_paise
FROM candidates WHERE nth = 1
ON CONFLICT DO NOTHING
"""
_OLD_PARK = """
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
FROM invoice_lines l
LEFT JOIN purchase_orders o ON o.po_number = l.po_number
LEFT JOIN po_lines p ON p.po_number = l.po_number AND p.sku = l.sku
WHERE l.workflow_id = $1
  AND NOT EXISTS (SELECT 1 FROM line_matches m WHERE m.workflow_id = $1
                  AND m.invoice_no = l.invoice_no AND m.line_no = l.line_no)
ON CONFLICT DO NOTHING
"""
_OLD_SNAPSHOT = """
INSERT INTO stock_snapshots (workflow_id, po_number, sku, qty_received)
SELECT $1, m.po_number, m.sku,
       coalesce((SELECT sum(g.qty_received) FROM goods_receipts g
                 WHERE g.po_number = m.po_number AND g.sku = m.sku
                   AND g.warehouse = $2), 0)
FROM (SELECT DISTINCT po_number, sku FROM line_matches WHERE workflow_id = $1) m
"""
_OLD_COMPARE = """
INSERT INTO comparisons (workflow_id, seq, invoice_no, line_no, supplier_id, sku,
                         invoiced_qty, received_qty, invoice_price_paise, po_price_paise)
SELECT $1, row_number() OVER (ORDER BY l.invoice_no, l.line_no), l.invoice_no,
       l.line_no, l.supplier_id, l.sku, l.qty, s.qty_received, l.unit_price_paise,
       m.po_price_paise
FROM invoice_lines l
JOIN line_matches m ON m.workflow_id = l.workflow_id AND m.invoice_no = l.invoice_no
                   AND m.line_no = l.line_no
JOIN stock_snapshots s ON s.workflow_id = l.workflow_id AND s.po_number = m.po_number
                      AND s.sku = m.sku
WHERE l.workflow_id = $1
"""

_TABLES = {
    "line_matches": "invoice_no, line_no, po_number, sku, po_price_paise",
    "parked_items": "item_key, step, invoice_no, line_no, reason, evidence",
    "stock_snapshots": "po_number, sku, qty_received",
    "comparisons": "seq, invoice_no, line_no, supplier_id, sku, invoiced_qty, received_qty, "
                   "invoice_price_paise, po_price_paise",
}


async def _working_set(pool: asyncpg.Pool, wf: str, day: str, warehouse: str) -> None:
    """The run's invoices and extracted lines, as steps 1-2 leave them, plus three lines that
    bill again a PO line an earlier invoice (in another range) already billed."""
    await pool.execute(
        "INSERT INTO run_invoices (workflow_id, invoice_no, seq, supplier_id, document) "
        "SELECT $1, invoice_no, row_number() OVER (ORDER BY invoice_no), supplier_id, document "
        "FROM invoices WHERE business_date = $2 AND warehouse = $3", wf,
        date.fromisoformat(day), warehouse)
    lines = []
    for doc in await pool.fetch(
            "SELECT invoice_no, document FROM run_invoices WHERE workflow_id = $1 ORDER BY seq", wf):
        try:
            found = parse_document(doc["document"])
        except UnreadableInvoice:
            continue
        lines += [(wf, doc["invoice_no"], x.line_no, found.supplier_id, found.po_number, x.sku,
                   x.description, x.quantity, x.unit_price_paise) for x in found.lines]
    await pool.copy_records_to_table("invoice_lines", records=lines)
    await pool.execute(
        """
        INSERT INTO invoice_lines
        SELECT l.workflow_id, later.invoice_no, l.line_no + 100, l.supplier_id, l.po_number, l.sku,
               l.description, l.qty, l.unit_price_paise
        FROM invoice_lines l
        JOIN run_invoices early ON early.workflow_id = l.workflow_id
                               AND early.invoice_no = l.invoice_no
        JOIN run_invoices later ON later.workflow_id = l.workflow_id
                               AND later.seq = early.seq + 17
        WHERE l.workflow_id = $1 AND early.seq = 2 AND l.po_number IS NOT NULL
        """,
        wf,
    )


async def _rows(pool: asyncpg.Pool, wf: str) -> dict[str, list[tuple]]:
    return {t: [tuple(r) for r in await pool.fetch(
        f"SELECT {cols} FROM {t} WHERE workflow_id = $1 ORDER BY {cols}", wf)]
        for t, cols in _TABLES.items()}


async def _by_ranges(pool: asyncpg.Pool, wf: str, warehouse: str, size: int) -> None:
    async with pool.acquire() as conn:
        last = await last_invoice_seq(conn, wf)
        for fill in (lambda a, b: match_range(conn, wf, a, b),
                     lambda a, b: snapshot_range(conn, wf, warehouse, a, b),
                     lambda a, b: compare_range(conn, wf, a, b)):
            for after in range(0, last, size):
                await fill(after, min(after + size, last))


async def test_ranges_give_the_rows_the_whole_run_statements_gave(pool: asyncpg.Pool) -> None:
    day, warehouse = "2026-10-14", "ranges-wh"
    await seed_night(pool, day, warehouse, invoices=60, mismatches=10)
    old, new = "ranges-test-old", "ranges-test-new"
    for wf in (old, new):
        await _working_set(pool, wf, day, warehouse)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(_OLD_MATCH, old)
        await conn.execute(_OLD_PARK, old)
        await conn.execute(_OLD_SNAPSHOT, old, warehouse)
        await conn.execute(_OLD_COMPARE, old)

    await _by_ranges(pool, new, warehouse, size=7)
    expected = await _rows(pool, old)
    assert await _rows(pool, new) == expected
    assert any("already billed in this run" in r[4] for r in expected["parked_items"]), \
        "the night bills a PO line twice"
    assert len(expected["comparisons"]) > 100

    await _by_ranges(pool, new, warehouse, size=5)  # a redo, cut differently: adds nothing
    assert await _rows(pool, new) == expected
