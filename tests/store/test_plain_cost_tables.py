"""The bench's plain cost copies every table a night writes (bench/plain.py): the tables come from
the catalog, so a table a later issue adds is counted without anyone remembering to list it (the
hand-written list had missed the acceptances and fingerprints of issue 21)."""

from __future__ import annotations

import asyncpg

from bench.plain import run_tables


async def test_every_run_table_is_copied(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        tables = set(await run_tables(conn))
        await conn.execute("CREATE TABLE plain_acceptances (LIKE acceptances)")
        try:
            assert "plain_acceptances" not in set(await run_tables(conn))  # scratch, not a run's
        finally:
            await conn.execute("DROP TABLE plain_acceptances")
    written_by_a_night = {
        "run_invoices", "invoice_reads", "model_calls", "extractions", "invoice_lines",
        "line_matches", "stock_snapshots", "comparisons", "mismatches", "parked_items",
        "ledger_entries", "stock_movements", "outbox", "acceptances", "held_lines",
        "invoice_fingerprints", "lines_matched", "stock_snapshot_taken",
    }
    assert written_by_a_night <= tables, sorted(written_by_a_night - tables)
    assert "open_comparisons" not in tables  # a view over comparisons: its rows are counted once
