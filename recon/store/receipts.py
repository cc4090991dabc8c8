"""Goods receipts as `recon load receipts` writes them: staged by COPY, checked against the
purchase orders and the receipts already loaded, then inserted in one statement.

A receipt is a fact the nights count: once loaded under its ERP number (`receipt_ref`) it never
changes. The same number with the same values again is nothing new; with other values it is
refused. The caller owns the transaction and the lock.
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

_STAGE = """
CREATE TEMP TABLE load_receipts (
    line integer NOT NULL, receipt_ref text NOT NULL, po_number text NOT NULL, sku text NOT NULL,
    warehouse text NOT NULL, qty_received integer NOT NULL, received_on date NOT NULL
) ON COMMIT DROP
"""
COLUMNS = ["line", "receipt_ref", "po_number", "sku", "warehouse", "qty_received", "received_on"]

# How a receipt is quoted when the stored and the file's values differ.
_SHOWN = "format('%s %s at %s: %s on %s', {0}.po_number, {0}.sku, {0}.warehouse, " \
         "{0}.qty_received, {0}.received_on)"

# The first row (in file order) that the books refuse.
_FIRST_CONFLICT = f"""
SELECT * FROM (
    SELECT l.line, 'unknown_po' AS problem, l.receipt_ref AS receipt_id, l.po_number, l.sku,
           NULL::text AS stored, NULL::text AS given
    FROM load_receipts l
    WHERE NOT EXISTS (SELECT 1 FROM purchase_orders o WHERE o.po_number = l.po_number)
    UNION ALL
    SELECT l.line, 'receipt_off_po', l.receipt_ref, l.po_number, l.sku, NULL, NULL
    FROM load_receipts l
    WHERE EXISTS (SELECT 1 FROM purchase_orders o WHERE o.po_number = l.po_number)
      AND NOT EXISTS (SELECT 1 FROM po_lines p WHERE p.po_number = l.po_number AND p.sku = l.sku)
    UNION ALL
    SELECT l.line, 'receipt_wrong_warehouse', l.receipt_ref, l.po_number, l.sku, o.warehouse,
           l.warehouse
    FROM load_receipts l JOIN purchase_orders o ON o.po_number = l.po_number
    WHERE o.warehouse <> l.warehouse
    UNION ALL
    SELECT l.line, 'receipt_before_order', l.receipt_ref, l.po_number, l.sku,
           o.ordered_on::text, l.received_on::text
    FROM load_receipts l JOIN purchase_orders o ON o.po_number = l.po_number
    WHERE l.received_on < o.ordered_on
    UNION ALL
    SELECT l.line, 'receipt_changed', l.receipt_ref, l.po_number, l.sku, {_SHOWN.format('g')},
           {_SHOWN.format('l')}
    FROM load_receipts l JOIN goods_receipts g ON g.receipt_ref = l.receipt_ref
    WHERE (g.po_number, g.sku, g.warehouse, g.qty_received, g.received_on)
          IS DISTINCT FROM (l.po_number, l.sku, l.warehouse, l.qty_received, l.received_on)
) found
ORDER BY line LIMIT 1
"""

_INSERT = """
WITH written AS (
    INSERT INTO goods_receipts (receipt_ref, po_number, sku, warehouse, qty_received, received_on)
    SELECT receipt_ref, po_number, sku, warehouse, qty_received, received_on
    FROM load_receipts ORDER BY receipt_ref
    ON CONFLICT (receipt_ref) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM written
"""


async def stage(conn: asyncpg.Connection, rows: Sequence[tuple]) -> None:
    """Rows in `COLUMNS` order, by one COPY into this transaction's table."""
    await conn.execute(_STAGE)
    await conn.copy_records_to_table("load_receipts", records=rows, columns=COLUMNS)
    await conn.execute("ANALYZE load_receipts")


async def first_conflict(conn: asyncpg.Connection) -> asyncpg.Record | None:
    return await conn.fetchrow(_FIRST_CONFLICT)


async def write(conn: asyncpg.Connection) -> int:
    """The receipts inserted; the others were loaded before with the same values."""
    return int(await conn.fetchval(_INSERT))
