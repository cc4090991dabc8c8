"""Planner statistics for the night's working tables, refreshed where a step has just filled them.

A 100,000-invoice night adds ~250,000 rows to `comparisons` (and as many to `invoice_lines`,
`line_matches`, `stock_snapshots`) within seconds, long before autovacuum's next look. Until the
statistics know that, Postgres plans a range of one workflow id as if it held one row, and reads
the whole night once per range (seen: step 8 in 34 s instead of 13 s at 500 entries per range,
the extraction's per-batch reads walking `run_invoices` the same way; with `parked_items` thought
empty, every range of step 8 compared each line with every parked item: 0.57 s a range instead of
0.05 s). ANALYZE samples a fixed
number of rows, so its cost (~0.1-0.4 s here) does not grow with the table (docs/design.md §8).
"""

from __future__ import annotations

import asyncio

import asyncpg

# Below this many rows a night's write cannot mislead the planner much: its closing checks skip the
# refresh (a small night, or the retry of one after a crash, finishes sooner without it).
BULK_ROWS = 1000

# Only these tables, never a name from outside: ANALYZE takes no parameters.
WORKING_TABLES = frozenset({
    "run_invoices", "invoice_lines", "extractions", "line_matches", "stock_snapshots",
    "comparisons", "mismatches", "ledger_entries", "stock_movements", "parked_items",
    "acceptances", "held_lines", "invoice_fingerprints",
})


async def refresh_statistics(conn: asyncpg.Connection | asyncpg.Pool, *tables: str) -> None:
    """ANALYZE the given working tables (outside the caller's write transaction: it only reads).
    Given the pool, each table is analyzed on a connection of its own, all at once: one ANALYZE
    keeps one backend busy, and the steps that refresh three or four tables waited for them one
    after another while the machine's other core idled."""
    unknown = set(tables) - WORKING_TABLES
    if unknown:
        raise ValueError(f"not a working table: {', '.join(sorted(unknown))}")
    if isinstance(conn, asyncpg.Pool) and len(tables) > 1:
        # Each call takes a connection and gives it back: nothing is held while one is awaited.
        await asyncio.gather(*(conn.execute(f"ANALYZE {table}") for table in tables))
    else:
        await conn.execute(f"ANALYZE {', '.join(tables)}")
