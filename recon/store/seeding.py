"""Writing a night's inputs: suppliers, purchase orders and their lines, goods received, stock on
hand and invoice documents, by the seed (`recon seed`) and the importer (`recon import`).

Both callers own the transaction: a night is written whole or not at all, so a half-seeded or
half-imported night is never reconciled half.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

import asyncpg


@dataclass
class NightChunk:
    """Rows of one slice of a night, one list per table, in the column order `copy_night_rows`
    copies them: the seed fills them, this module owns their shape."""

    purchase_orders: list[tuple] = field(default_factory=list)
    po_lines: list[tuple] = field(default_factory=list)
    goods_receipts: list[tuple] = field(default_factory=list)
    invoices: list[tuple] = field(default_factory=list)


async def invoices_of_night(conn: asyncpg.Connection, day: date, warehouse: str) -> int:
    """How many invoices the night already has (a seed refuses a night that has any)."""
    return await conn.fetchval(
        "SELECT count(*) FROM invoices WHERE business_date = $1 AND warehouse = $2",
        day,
        warehouse,
    )


async def numbers_per_supplier(conn: asyncpg.Connection) -> bool:
    """Does the database key invoices by (supplier, number)? Only then can the seed plant one
    invoice number sent by two suppliers."""
    return bool(await conn.fetchval(
        """
        SELECT 'supplier_id' = ANY(array_agg(a.attname::text))
        FROM pg_index i
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = 'invoices'::regclass AND i.indisprimary
        """
    ))


async def write_suppliers(conn: asyncpg.Connection, suppliers: Sequence[tuple[str, str, str]]) -> None:
    """(supplier_id, name, email); suppliers are shared by every night, so existing ones stay."""
    await conn.executemany(
        "INSERT INTO suppliers (supplier_id, name, email) VALUES ($1, $2, $3)"
        " ON CONFLICT (supplier_id) DO NOTHING",
        sorted(suppliers, key=lambda r: r[0].encode()),  # key order, as every writer's
    )


async def copy_night_rows(conn: asyncpg.Connection, chunk: NightChunk) -> None:
    """One chunk of the night, COPY per table: bounded memory whatever the night's size."""
    await conn.copy_records_to_table(
        "purchase_orders", records=chunk.purchase_orders,
        columns=["po_number", "supplier_id", "warehouse", "ordered_on"],
    )
    await conn.copy_records_to_table(
        "po_lines", records=chunk.po_lines,
        columns=["po_number", "sku", "description", "qty_ordered", "unit_price_paise"],
    )
    await conn.copy_records_to_table(
        "goods_receipts", records=chunk.goods_receipts,
        columns=["po_number", "sku", "warehouse", "qty_received", "received_on"],
    )
    await conn.copy_records_to_table(
        "invoices", records=chunk.invoices,
        columns=["invoice_no", "supplier_id", "business_date", "warehouse", "document"],
    )


async def write_stock_levels(conn: asyncpg.Connection, rows: Sequence[tuple[str, str, int]]) -> None:
    """(warehouse, sku, qty_on_hand); a level already recorded stays as it is."""
    await conn.executemany(
        "INSERT INTO stock_levels (warehouse, sku, qty_on_hand) VALUES ($1, $2, $3)"
        " ON CONFLICT (warehouse, sku) DO NOTHING",
        # The order step 8 takes levels in (recon/store/stock.py): a seed beside a booking waits.
        sorted(rows, key=lambda r: (r[0].encode(), r[1].encode())),
    )


# In key order (bytewise), as every keyed multi-row insert of the store: imports queue on one lock,
# a seed does not, and two writers of overlapping keys wait for each other only if both take the
# keys in one order (recon/store/ledger.py `_INSERT` says why the statement must order them).
_IMPORT_INVOICES = """
            INSERT INTO invoices (invoice_no, supplier_id, business_date, warehouse, document, source)
            SELECT n, s, d, w, t, 'import'
            FROM unnest($1::text[], $2::text[], $3::date[], $4::text[], $5::text[]) AS x(n, s, d, w, t)
            ORDER BY s COLLATE "C", n COLLATE "C"
            ON CONFLICT (supplier_id, invoice_no) DO NOTHING RETURNING supplier_id, invoice_no
            """


async def known_suppliers(conn: asyncpg.Connection) -> set[str]:
    return {r["supplier_id"] for r in await conn.fetch("SELECT supplier_id FROM suppliers")}


async def insert_imported_invoices(conn: asyncpg.Connection,
                                   rows: Sequence[tuple[str, str, date, str, str]]
                                   ) -> list[tuple[str, str]]:
    """(invoice_no, supplier_id, business_date, warehouse, document) in one statement; an
    invoice is its supplier's number, and one already stored is kept as it is (the importer
    decides first what is new). Returns the (supplier_id, invoice_no) pairs inserted."""
    if not rows:
        return []
    inserted = await conn.fetch(_IMPORT_INVOICES, *[list(c) for c in zip(*rows, strict=True)])
    return [(r["supplier_id"], r["invoice_no"]) for r in inserted]
