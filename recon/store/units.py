"""Units of measure in the books: the suppliers' packings as `recon load conversions` writes them,
and step 3's restating of an invoice line billed in another unit than its PO line's.

Step 3 (recon/store/matching.py calls `restate_lines` in its transaction, before its mark):
a matched line whose document states a unit other than its PO line's (after synonyms: `PCS` is
`C62`) is converted exactly (recon/domain/units.py): its quantity becomes a whole number of PO
units, its price the billed amount over that quantity, and `billed_as` keeps what the document
said. A PO line that states no unit takes a unit that measures (kg, litre, hour) as billed
(`units.taken_as_billed`). A line with no known conversion, or one that is not a whole number of
PO units, is parked with the unit, SKU and supplier named, and its match removed: nothing of it
is weighed, posted or booked. Filled once: a converted line states the PO's unit, so running it
again finds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal

import asyncpg

from recon.domain import units
from recon.domain.keys import PARKED_LINE, row_template

_STAGE = """
CREATE TEMP TABLE load_unit_conversions (
    line integer NOT NULL, supplier_id text NOT NULL, sku text NOT NULL, unit text NOT NULL,
    per numeric NOT NULL, base_unit text NOT NULL
) ON COMMIT DROP
"""
COLUMNS = ["line", "supplier_id", "sku", "unit", "per", "base_unit"]

_FIRST_CONFLICT = """
SELECT l.line, 'unknown_supplier' AS problem, l.supplier_id
FROM load_unit_conversions l
WHERE NOT EXISTS (SELECT 1 FROM suppliers s WHERE s.supplier_id = l.supplier_id)
ORDER BY l.line LIMIT 1
"""

_UPSERT = """
WITH before AS (
    SELECT l.supplier_id, l.sku, l.unit, c.unit IS NULL AS is_new
    FROM load_unit_conversions l
    LEFT JOIN unit_conversions c USING (supplier_id, sku, unit)
), written AS (
    INSERT INTO unit_conversions AS c (supplier_id, sku, unit, per, base_unit)
    SELECT supplier_id, sku, unit, per, base_unit FROM load_unit_conversions
    ON CONFLICT (supplier_id, sku, unit) DO UPDATE
        SET per = EXCLUDED.per, base_unit = EXCLUDED.base_unit
        WHERE (c.per, c.base_unit) IS DISTINCT FROM (EXCLUDED.per, EXCLUDED.base_unit)
    RETURNING c.supplier_id, c.sku, c.unit
)
SELECT count(*) FILTER (WHERE b.is_new) AS new, count(*) FILTER (WHERE NOT b.is_new) AS changed
FROM written w JOIN before b USING (supplier_id, sku, unit)
"""


async def stage(conn: asyncpg.Connection, rows: Sequence[tuple]) -> None:
    """Rows in `COLUMNS` order, by one COPY into this transaction's table."""
    await conn.execute(_STAGE)
    await conn.copy_records_to_table("load_unit_conversions", records=rows, columns=COLUMNS)


async def first_conflict(conn: asyncpg.Connection) -> asyncpg.Record | None:
    return await conn.fetchrow(_FIRST_CONFLICT)


async def write(conn: asyncpg.Connection) -> tuple[int, int]:
    """(new, changed) conversions."""
    row = await conn.fetchrow(_UPSERT)
    return int(row["new"]), int(row["changed"])


# ------------------------------------------------------------------ step 3

# The night's own matched lines whose document states a unit other than the PO line's. Only lines
# that state a unit are read (text layouts state none: the PO's unit).
_BILLED_IN_ANOTHER_UNIT = f"""
SELECT l.invoice_no, l.line_no, l.supplier_id, l.sku, l.description, l.qty, l.unit,
       coalesce(l.price_exact, l.unit_price_paise) AS price, m.po_number, p.unit AS po_unit,
       p.unit_stated,
       {units.canonical_sql("l.unit")} AS billed
FROM invoice_lines l
JOIN line_matches m ON m.workflow_id = l.workflow_id AND m.invoice_no = l.invoice_no
                   AND m.line_no = l.line_no AND m.carried_from IS NULL
JOIN po_lines p ON p.po_number = m.po_number AND p.sku = m.sku
WHERE l.workflow_id = $1 AND l.unit IS NOT NULL
  AND {units.canonical_sql("l.unit")} <> p.unit
"""

_PACKS = """
SELECT supplier_id, sku, unit, per, base_unit FROM unit_conversions
WHERE (supplier_id, sku) IN (SELECT * FROM unnest($1::text[], $2::text[]))
"""

_RESTATE = """
UPDATE invoice_lines l
SET qty = x.qty, unit_price_paise = x.paise, price_exact = x.exact, unit = x.unit,
    billed_as = x.billed_as
FROM unnest($2::text[], $3::int[], $4::int[], $5::bigint[], $6::numeric[], $7::text[],
            $8::text[]) AS x(invoice_no, line_no, qty, paise, exact, unit, billed_as)
WHERE l.workflow_id = $1 AND l.invoice_no = x.invoice_no AND l.line_no = x.line_no
"""

_PARK = """
WITH parked AS (
    INSERT INTO parked_items (workflow_id, item_key, step, invoice_no, line_no, reason, evidence)
    SELECT $1, format($2, x.invoice_no, x.line_no), 'match_orders', x.invoice_no, x.line_no,
           x.reason, x.evidence
    FROM unnest($3::text[], $4::int[], $5::text[], $6::text[])
         AS x(invoice_no, line_no, reason, evidence)
    ON CONFLICT (workflow_id, item_key) DO NOTHING
)
DELETE FROM line_matches m USING unnest($3::text[], $4::int[]) AS x(invoice_no, line_no)
WHERE m.workflow_id = $1 AND m.invoice_no = x.invoice_no AND m.line_no = x.line_no
"""

MAX_QTY = 2_147_483_647  # `invoice_lines.qty` is an integer


async def restate_lines(conn: asyncpg.Connection, workflow_id: str) -> None:
    """Step 3, in its transaction: each line billed in another unit restated in its PO line's
    unit, or parked with the unit, SKU and supplier named."""
    lines = await conn.fetch(_BILLED_IN_ANOTHER_UNIT, workflow_id)
    if not lines:
        return
    keys = sorted({(r["supplier_id"], r["sku"]) for r in lines})
    packs: dict[tuple[str, str], list[units.Pack]] = {}
    for p in await conn.fetch(_PACKS, [k[0] for k in keys], [k[1] for k in keys]):
        packs.setdefault((p["supplier_id"], p["sku"]), []).append(
            units.Pack(p["unit"], p["per"], p["base_unit"]))
    done: list[tuple] = []
    parked: list[tuple] = []
    for r in lines:
        line_packs = packs.get((r["supplier_id"], r["sku"]), ())
        if units.taken_as_billed(r["billed"], r["po_unit"], r["unit_stated"], line_packs):
            continue
        price = units.plain(Decimal(r["price"]))
        found = units.restate(r["qty"], price, r["billed"], r["po_unit"], line_packs)
        billed_as = f"{r['qty']} {r['unit']} at {price} paise"
        if found.problem is None and found.qty > MAX_QTY:
            found = units.Restated(problem=f"{found.qty} {r['po_unit']} is too many units")
        if found.problem is not None:
            parked.append((r["invoice_no"], r["line_no"],
                           f"unit {r['unit']} of SKU {r['sku']} from supplier {r['supplier_id']}:"
                           f" {found.problem} (the unit of {r['po_number']})",
                           f"billed {r['qty']} {r['unit']} of {r['sku']} ({r['description']}) at "
                           f"{price} paise per {r['unit']} on {r['po_number']}, ordered in "
                           f"{r['po_unit']}; a supplier's pack is "
                           f"stated in unit_conversions.csv (recon load conversions)"))
            continue
        paise = int(found.price.quantize(Decimal(1), rounding=ROUND_HALF_UP))
        done.append((r["invoice_no"], r["line_no"], found.qty, paise,
                     None if found.price == paise else found.price, r["po_unit"], billed_as))
    if done:
        await conn.execute(_RESTATE, workflow_id, *map(list, zip(*done, strict=True)))
    if parked:
        await conn.execute(_PARK, workflow_id, row_template(PARKED_LINE),
                           *map(list, zip(*parked, strict=True)))
