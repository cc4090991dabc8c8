"""Purchase orders and their lines as `recon load orders` writes them, set-based whatever the
file's size: the rows are copied into a temporary table, checked against the books in a few
statements, then written with one statement per table.

Rules (README, "Master data in"): a PO keeps its supplier, warehouse and order date; a PO line
may be amended (description, quantity, price, unit) but its price and unit never change once an
invoice has billed it, and its quantity never drops below what is already received or billed against it.
"Billed" is any invoice line of any night that cites the PO line (one per supplier, invoice
number and line, whichever runs read it). The caller owns the transaction and the lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

_STAGE = """
CREATE TEMP TABLE load_order_lines (
    line integer NOT NULL, po_number text NOT NULL, supplier_id text NOT NULL,
    warehouse text NOT NULL, ordered_on date NOT NULL, sku text NOT NULL,
    description text NOT NULL, qty_ordered integer NOT NULL, unit_price_paise bigint NOT NULL,
    tax_rate numeric, price_exact numeric, unit text NOT NULL, unit_stated boolean NOT NULL
) ON COMMIT DROP
"""
COLUMNS = ["line", "po_number", "supplier_id", "warehouse", "ordered_on", "sku", "description",
           "qty_ordered", "unit_price_paise", "tax_rate", "price_exact", "unit", "unit_stated"]

# The first row (in file order) naming a supplier nobody loaded, or a PO stored with another
# supplier, warehouse or order date.
_FIRST_HEADER_CONFLICT = """
SELECT * FROM (
    SELECT l.line, 'unknown_supplier' AS problem, l.po_number, l.supplier_id,
           NULL::text AS field, NULL::text AS stored, NULL::text AS given
    FROM load_order_lines l
    WHERE NOT EXISTS (SELECT 1 FROM suppliers s WHERE s.supplier_id = l.supplier_id)
    UNION ALL
    SELECT l.line, 'po_header_changed', l.po_number, l.supplier_id,
           CASE WHEN o.supplier_id <> l.supplier_id THEN 'supplier_id'
                WHEN o.warehouse <> l.warehouse THEN 'warehouse' ELSE 'ordered_on' END,
           CASE WHEN o.supplier_id <> l.supplier_id THEN o.supplier_id
                WHEN o.warehouse <> l.warehouse THEN o.warehouse ELSE o.ordered_on::text END,
           CASE WHEN o.supplier_id <> l.supplier_id THEN l.supplier_id
                WHEN o.warehouse <> l.warehouse THEN l.warehouse ELSE l.ordered_on::text END
    FROM load_order_lines l JOIN purchase_orders o ON o.po_number = l.po_number
    WHERE (o.supplier_id, o.warehouse, o.ordered_on) <> (l.supplier_id, l.warehouse, l.ordered_on)
) found
ORDER BY line LIMIT 1
"""

# Stored lines the file would reprice or shrink: the only rows the books can refuse. The checks
# below read invoice lines and receipts for these alone (one pass, usually over no rows at all).
_TOUCH = """
CREATE TEMP TABLE load_touched_lines ON COMMIT DROP AS
SELECT l.line, l.po_number, l.sku, p.unit_price_paise AS stored_price,
       l.unit_price_paise AS given_price, p.unit AS stored_unit, l.unit AS given_unit,
       coalesce(l.price_exact, l.unit_price_paise)
           <> coalesce(p.price_exact, p.unit_price_paise) AS repriced,
       p.qty_ordered AS stored_qty, l.qty_ordered AS given_qty
FROM load_order_lines l JOIN po_lines p ON p.po_number = l.po_number AND p.sku = l.sku
WHERE coalesce(l.price_exact, l.unit_price_paise) <> coalesce(p.price_exact, p.unit_price_paise)
   OR l.unit <> p.unit OR l.qty_ordered < p.qty_ordered
"""

# A night may name an invoice `{supplier}:{number}` in its working set (nights that carry the
# supplier in their keys) or by its number alone (older nights): both are the same invoice line.
_INVOICE_NUMBER = """CASE WHEN starts_with(i.invoice_no, i.supplier_id || ':')
                          THEN substr(i.invoice_no, length(i.supplier_id) + 2)
                          ELSE i.invoice_no END"""

_FIRST_BOOKS_CONFLICT = f"""
WITH billed AS (
    SELECT DISTINCT ON (i.supplier_id, number, i.line_no)
           i.po_number, i.sku, i.supplier_id, number AS invoice_no, i.qty
    FROM invoice_lines i
    JOIN load_touched_lines t ON t.po_number = i.po_number AND t.sku = i.sku
    CROSS JOIN LATERAL (SELECT {_INVOICE_NUMBER} AS number) n
    ORDER BY i.supplier_id, number, i.line_no
), billed_per_line AS (
    SELECT po_number, sku, sum(qty) AS billed,
           (array_agg(supplier_id ORDER BY supplier_id, invoice_no))[1] AS supplier_id,
           (array_agg(invoice_no ORDER BY supplier_id, invoice_no))[1] AS invoice_no
    FROM billed GROUP BY po_number, sku
), received AS (
    SELECT g.po_number, g.sku, sum(g.qty_received) AS received
    FROM goods_receipts g
    JOIN load_touched_lines t ON t.po_number = g.po_number AND t.sku = g.sku
    GROUP BY g.po_number, g.sku
)
SELECT * FROM (
    SELECT t.line, 'price_changed_after_billing' AS problem, t.po_number, t.sku,
           t.stored_price AS stored, t.given_price AS given, b.invoice_no, b.supplier_id,
           0::bigint AS received, 0::bigint AS billed, t.stored_unit, t.given_unit,
           (SELECT s.currency FROM suppliers s WHERE s.supplier_id = b.supplier_id) AS currency
    FROM load_touched_lines t
    JOIN billed_per_line b ON b.po_number = t.po_number AND b.sku = t.sku
    WHERE t.repriced OR t.given_unit <> t.stored_unit
    UNION ALL
    SELECT t.line, 'qty_below_books', t.po_number, t.sku, t.stored_qty, t.given_qty, NULL, NULL,
           coalesce(r.received, 0), coalesce(b.billed, 0), NULL, NULL, NULL
    FROM load_touched_lines t
    LEFT JOIN billed_per_line b ON b.po_number = t.po_number AND b.sku = t.sku
    LEFT JOIN received r ON r.po_number = t.po_number AND r.sku = t.sku
    WHERE t.given_qty < t.stored_qty
      AND t.given_qty < greatest(coalesce(r.received, 0), coalesce(b.billed, 0))
) found
ORDER BY line LIMIT 1
"""

_NEW_ORDERS = """
WITH written AS (
    INSERT INTO purchase_orders (po_number, supplier_id, warehouse, ordered_on)
    SELECT DISTINCT ON (po_number) po_number, supplier_id, warehouse, ordered_on
    FROM load_order_lines ORDER BY po_number, line
    ON CONFLICT (po_number) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM written
"""

_UPSERT_LINES = """
WITH before AS (
    SELECT l.po_number, l.sku, p.po_number IS NULL AS is_new
    FROM load_order_lines l LEFT JOIN po_lines p ON p.po_number = l.po_number AND p.sku = l.sku
), written AS (
    INSERT INTO po_lines AS p (po_number, sku, description, qty_ordered, unit_price_paise,
                               tax_rate, price_exact, unit, unit_stated)
    SELECT po_number, sku, description, qty_ordered, unit_price_paise, tax_rate, price_exact,
           unit, unit_stated
    FROM load_order_lines ORDER BY po_number, sku
    ON CONFLICT (po_number, sku) DO UPDATE
        -- a file that states no rate keeps the stored one (as a supplier's GSTIN is kept)
        SET description = EXCLUDED.description, qty_ordered = EXCLUDED.qty_ordered,
            unit_price_paise = EXCLUDED.unit_price_paise,
            tax_rate = coalesce(EXCLUDED.tax_rate, p.tax_rate),
            price_exact = EXCLUDED.price_exact, unit = EXCLUDED.unit,
            unit_stated = EXCLUDED.unit_stated
        WHERE (p.description, p.qty_ordered, p.unit_price_paise, p.tax_rate, p.price_exact, p.unit,
               p.unit_stated)
              IS DISTINCT FROM (EXCLUDED.description, EXCLUDED.qty_ordered,
                                EXCLUDED.unit_price_paise, coalesce(EXCLUDED.tax_rate, p.tax_rate),
                                EXCLUDED.price_exact, EXCLUDED.unit, EXCLUDED.unit_stated)
    RETURNING p.po_number, p.sku
)
SELECT count(*) FILTER (WHERE b.is_new) AS new, count(*) FILTER (WHERE NOT b.is_new) AS amended
FROM written w JOIN before b ON b.po_number = w.po_number AND b.sku = w.sku
"""


@dataclass(frozen=True)
class Written:
    new_orders: int
    new_lines: int
    amended_lines: int


async def stage(conn: asyncpg.Connection, rows: Sequence[tuple]) -> None:
    """Rows in `COLUMNS` order, by one COPY into this transaction's table."""
    await conn.execute(_STAGE)
    await conn.copy_records_to_table("load_order_lines", records=rows, columns=COLUMNS)
    await conn.execute("ANALYZE load_order_lines")  # the checks join it with the stored lines


async def first_header_conflict(conn: asyncpg.Connection) -> asyncpg.Record | None:
    return await conn.fetchrow(_FIRST_HEADER_CONFLICT)


async def first_books_conflict(conn: asyncpg.Connection) -> asyncpg.Record | None:
    await conn.execute(_TOUCH)
    if not await conn.fetchval("SELECT count(*) FROM load_touched_lines"):
        return None
    return await conn.fetchrow(_FIRST_BOOKS_CONFLICT)


async def write(conn: asyncpg.Connection) -> Written:
    new_orders = await conn.fetchval(_NEW_ORDERS)
    lines = await conn.fetchrow(_UPSERT_LINES)
    return Written(new_orders=new_orders, new_lines=lines["new"], amended_lines=lines["amended"])
