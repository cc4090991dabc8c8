"""Who a document's sender is: suppliers' tax and network ids (GSTIN, VAT id, Peppol endpoint),
their billing currency and address, and the supplier of each purchase order. Read by the importer
to attribute documents that name their sender by an id, set by `recon supplier` and the seed."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg


async def supplier_directory(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT supplier_id, email, gstin, vat_id, peppol_endpoint, currency FROM suppliers")


async def po_suppliers(conn: asyncpg.Connection, po_numbers: Sequence[str]) -> dict[str, str]:
    rows = await conn.fetch(
        "SELECT po_number, supplier_id FROM purchase_orders WHERE po_number = ANY($1::text[])",
        list(po_numbers))
    return {r["po_number"]: r["supplier_id"] for r in rows}


_SET_IDS = """
UPDATE suppliers SET gstin = coalesce($2, gstin), vat_id = coalesce($3, vat_id),
       peppol_endpoint = coalesce($4, peppol_endpoint), currency = coalesce($5, currency)
WHERE supplier_id = $1
RETURNING supplier_id, name, gstin, vat_id, peppol_endpoint, currency
"""


async def set_supplier_ids(conn: asyncpg.Connection, supplier_id: str, gstin: str | None,
                           vat_id: str | None, endpoint: str | None,
                           currency: str | None) -> asyncpg.Record | None:
    """Set the ids given (None keeps what is there); the unique indexes refuse an id that
    another supplier already holds. None when the supplier is unknown."""
    return await conn.fetchrow(_SET_IDS, supplier_id, gstin, vat_id, endpoint, currency)


async def holder_of(conn: asyncpg.Connection, column: str, value: str) -> str | None:
    """Which supplier holds this id (column is one of gstin, vat_id, peppol_endpoint)."""
    statements = {
        "gstin": "SELECT supplier_id FROM suppliers WHERE gstin = $1",
        "vat_id": "SELECT supplier_id FROM suppliers WHERE vat_id = $1",
        "peppol_endpoint": "SELECT supplier_id FROM suppliers WHERE peppol_endpoint = $1",
    }
    return await conn.fetchval(statements[column], value)


async def write_supplier_ids(conn: asyncpg.Connection,
                             rows: Sequence[tuple[str, str, str, str]]) -> None:
    """(supplier_id, gstin, vat_id, peppol_endpoint) for the seed: ids a supplier already has
    are kept."""
    await conn.executemany(
        "UPDATE suppliers SET gstin = coalesce(gstin, $2), vat_id = coalesce(vat_id, $3),"
        " peppol_endpoint = coalesce(peppol_endpoint, $4) WHERE supplier_id = $1",
        sorted(rows, key=lambda r: r[0].encode()))  # one statement per row: rows locked in key order
