"""Looking at a night from outside, as `recon chaos` and `recon demo` do: how far it got, whether
it waits for a person, and every row it wrote, for comparing two nights row by row.

Read-only, except for creating the scratch databases the chaos stack seeds its two nights into.
"""

from __future__ import annotations

import asyncpg

Db = asyncpg.Connection | asyncpg.Pool

# (table, key columns, compared columns); every row belongs to one run (workflow_id = $1).
TABLES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("ledger_entries", ("reference",),
     ("invoice_no", "supplier_id", "line_no", "kind", "amount_paise", "reverses", "memo")),
    ("stock_movements", ("key",),
     ("warehouse", "sku", "qty", "supplier_id", "invoice_no", "line_no", "note", "reverses")),
    ("outbox", ("key",),
     ("kind", "supplier_id", "recipient", "subject", "body", "amount_paise", "reverses")),
    ("parked_items", ("item_key",), ("step", "invoice_no", "line_no", "reason", "evidence")),
]
# The books across nights, compared where the database has them (the cumulative match's tables).
ACROSS_NIGHTS: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("held_lines", ("invoice_no", "supplier_id", "line_no"),
     ("po_number", "sku", "qty", "unit_price_paise", "billed_night", "issued_on", "held_until")),
    ("acceptances", ("invoice_no", "supplier_id", "line_no"),
     ("po_number", "sku", "qty_accepted", "live")),
]
MODEL_CALLS = ("SELECT invoice_no, count(*) AS requests FROM model_calls WHERE workflow_id = $1 "
               "GROUP BY invoice_no")

_PROGRESS_SQL = "SELECT " + " + ".join(
    f"(SELECT count(*) FROM {table} WHERE workflow_id = $1)"
    for table in ("invoice_reads", "run_invoices", "model_calls", "line_matches", "stock_snapshots",
                  "comparisons", "mismatches", "ledger_entries", "stock_movements", "outbox",
                  "parked_items")
) + (
    # step 1's fetch: an item counts once it is taken (a folder's claims are written at once)
    " + (SELECT count(*) FROM source_items WHERE workflow_id = $1 AND outcome <> 'pending')")
_PENDING_HANDOVER = ("SELECT step, error_type, error_message, posted::text FROM handovers "
                     "WHERE workflow_id = $1 AND decision IS NULL ORDER BY handover_no LIMIT 1")


async def create_database(conn: asyncpg.Connection, night: str) -> None:
    """A scratch database for one night; `night` is ours (control, chaos), never user input."""
    await conn.execute(f'CREATE DATABASE "{night}"')


async def table_rows(conn: Db, table: str, keys: tuple[str, ...], columns: tuple[str, ...],
                     workflow_id: str) -> list[asyncpg.Record]:
    """The compared columns of one of TABLES for one run."""
    return await conn.fetch(
        f"SELECT {', '.join(keys + columns)} FROM {table} WHERE workflow_id = $1", workflow_id)


async def existing_tables(conn: Db, names: list[str]) -> set[str]:
    """Which of `names` this database has (a table a later migration adds may be missing)."""
    rows = await conn.fetch("SELECT n FROM unnest($1::text[]) AS n WHERE to_regclass(n) IS NOT NULL",
                            names)
    return {r["n"] for r in rows}


async def stock_levels(conn: Db, warehouse: str) -> list[asyncpg.Record]:
    """What a warehouse holds: where the month's stock movements end up."""
    return await conn.fetch(
        "SELECT sku, qty_on_hand FROM stock_levels WHERE warehouse = $1", warehouse)


async def requests_per_invoice(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    """Model requests per invoice: a crash must not make an invoice be paid for twice."""
    return await conn.fetch(MODEL_CALLS, workflow_id)


async def repeated_requests(conn: Db, workflow_id: str, most: int) -> list[asyncpg.Record]:
    """Invoices asked about more than once, with the moments they were asked."""
    return await conn.fetch(
        "SELECT invoice_no, array_agg(called_at ORDER BY called_at) AS at FROM model_calls "
        "WHERE workflow_id = $1 GROUP BY invoice_no HAVING count(*) > 1 ORDER BY 1 LIMIT $2",
        workflow_id, most)


async def progress_rows(conn: asyncpg.Connection, workflow_id: str, timeout: float) -> int:
    """Rows the run wrote for the night, in every table a step writes: grows with any progress."""
    return await conn.fetchval(_PROGRESS_SQL, workflow_id, timeout=timeout)


async def pending_handover(conn: asyncpg.Connection, workflow_id: str,
                           timeout: float) -> asyncpg.Record | None:
    """The run's oldest handover still waiting for a decision, if any."""
    return await conn.fetchrow(_PENDING_HANDOVER, workflow_id, timeout=timeout)


async def ledger_rows(conn: Db, workflow_id: str) -> int:
    """Ledger rows of the run, live or reversed: what the demo reports at the crash."""
    return await conn.fetchval(
        "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1", workflow_id
    )


# `recon chaos --sources`: what came in through the sources, compared between the nights as
# (table, query) whose first columns are the key (a `copies` column counts rows of one key: an
# item or a master-data row taken twice shows there). The night's folders sit under
# `sources-{night}`, which the comparison normalises.
SOURCE_ROWS: list[tuple[str, int, str]] = [
    ("invoices", 1, "SELECT invoice_no, supplier_id, business_date::text AS day, warehouse, "
                    "md5(document) AS document FROM invoices WHERE warehouse = $1"),
    ("mail_messages", 1, "SELECT message_id, outcome, reason, documents, file_name FROM mail_messages"
                         " WHERE warehouse = $1"),
    ("source_items", 4, "SELECT s.kind, i.name, coalesce(i.uid, 0) AS uid, i.outcome, count(*) AS copies,"
                        " min(i.reason) AS reason, sum(i.documents) AS documents FROM source_items i"
                        " JOIN sources s ON s.id = i.source_id WHERE s.warehouse = $1"
                        " GROUP BY 1, 2, 3, 4"),
    ("suppliers", 1, "SELECT supplier_id, name, email FROM suppliers"
                     " WHERE $1::text IS NOT NULL"),  # every supplier: the directory is shared
    ("purchase_orders", 1, "SELECT po_number, supplier_id, ordered_on::text AS ordered_on FROM"
                           " purchase_orders WHERE warehouse = $1"),
    ("po_lines", 2, "SELECT l.po_number, l.sku, count(*) AS copies, min(l.qty_ordered) AS qty,"
                    " min(l.unit_price_paise) AS price FROM po_lines l JOIN purchase_orders o"
                    " USING (po_number) WHERE o.warehouse = $1 GROUP BY 1, 2"),
    ("goods_receipts", 3, "SELECT po_number, sku, received_on::text AS received_on, count(*) AS copies,"
                          " sum(qty_received) AS qty FROM goods_receipts WHERE warehouse = $1"
                          " GROUP BY 1, 2, 3"),
]


async def source_rows(conn: Db, query: str, warehouse: str) -> list[asyncpg.Record]:
    """One of SOURCE_ROWS for the chaos warehouse."""
    return await conn.fetch(query, warehouse)


async def fetched_items(conn: Db, workflow_id: str, warehouse: str) -> asyncpg.Record:
    """What the night's fetch took: items settled (imported, filed, loaded), items still pending,
    documents imported, and invoices the warehouse holds."""
    return await conn.fetchrow(
        "SELECT count(*) FILTER (WHERE outcome <> 'pending') AS settled,"
        " count(*) FILTER (WHERE outcome = 'pending') AS pending,"
        " coalesce(sum(documents), 0) AS documents,"
        " (SELECT count(*) FROM invoices WHERE warehouse = $2) AS invoices"
        " FROM source_items WHERE workflow_id = $1", workflow_id, warehouse)


async def batch_groups(conn: Db, workflow_id: str) -> int:
    """The model batch groups a night planned (`recon chaos --model batch`: one batch each)."""
    return await conn.fetchval("SELECT count(*) FROM model_batches WHERE workflow_id = $1",
                               workflow_id)


async def batch_waiting(conn: Db, workflow_id: str) -> str | None:
    """"waiting" once a batch of the night is created and unread, "read" once all are read."""
    row = await conn.fetchrow(
        "SELECT count(*) FILTER (WHERE batch_id IS NOT NULL AND read_at IS NULL) AS waiting,"
        " count(*) FILTER (WHERE read_at IS NOT NULL) AS read, count(*) AS groups"
        " FROM model_batches WHERE workflow_id = $1", workflow_id)
    if row["waiting"]:
        return "waiting"
    return "read" if row["groups"] and row["read"] == row["groups"] else None
