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
)
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
