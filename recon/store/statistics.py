"""Planner statistics for the night's working tables, refreshed where a step has just filled them,
and only when the planner does not already know how many rows the night has.

A 100,000-invoice night adds ~250,000 rows to `comparisons` (and as many to `invoice_lines`,
`line_matches`, `stock_snapshots`) within seconds, long before autovacuum's next look. Until the
statistics know that, Postgres plans a range of one workflow id as if it held one row, and reads
the whole night once per range (seen: step 8 in 34 s instead of 13 s at 500 entries per range,
the extraction's per-batch reads walking `run_invoices` the same way; with `parked_items` thought
empty, every range of step 8 compared each line with every parked item: 0.57 s a range instead of
0.05 s).

ANALYZE samples 3,000 pages of the table (statistics target 10, migration 070). While the history
is small those pages are in Postgres's buffers and a refresh costs a few milliseconds; on a month
of nights they are spread over gigabytes, most of them read from disk: 60-250 ms a table, about a
dozen tables a night, the whole of what a month of history added to a 10k night. Yet once the
statistics hold a few nights, the planner's estimate for a workflow id it has never seen is "one
night's worth" (the share of the rows outside the most common values, spread over the other
distinct ids), which is right for a night like the ones before. So each refresh first asks the
planner (EXPLAIN) how many rows it expects for this night and counts them (an index-only scan of
rows the step has just written, ~5 ms for 25,000); only a table whose estimate is off by more
than `STALE_FACTOR` is analyzed. The first nights (the estimate is one row), a night much larger or
smaller than the ones before, and a history grown to twice what the statistics saw are refreshed
as before (docs/design.md §8, "Statistics refreshed only when the planner is wrong").
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

# An estimate within this factor of the night's rows plans the same joins; a plan flips (hash to
# nested loop, or back) only when the guess is off by an order of magnitude or so.
STALE_FACTOR = 2
# Differences of fewer rows than this never matter to a plan: a night of 3 held lines that the
# planner expects 1 of is not worth reading 3,000 pages for.
FEW_ROWS = 100


def is_stale(estimated: float, actual: int) -> bool:
    """Whether the planner's estimate of a night's rows is far enough off to refresh. The planner
    never estimates fewer than one row, so a night's first rows on fresh statistics are stale."""
    low, high = sorted((max(estimated, 0.0), float(actual)))
    return high >= STALE_FACTOR * max(low, FEW_ROWS)


async def _estimates(conn: asyncpg.Connection | asyncpg.Pool, tables: tuple[str, ...],
                     workflow_id: str) -> dict[str, tuple[float, int]]:
    """Per table, the planner's estimate of the night's rows and their count: one statement for
    all the tables (migration 100)."""
    rows = await conn.fetch("SELECT tab, estimated, actual FROM recon_night_estimates($1::text[], $2)",
                            list(tables), workflow_id)
    return {r["tab"]: (float(r["estimated"]), int(r["actual"])) for r in rows}


async def _analyze(conn: asyncpg.Connection, table: str, estimated: float, actual: int) -> None:
    """ANALYZE one table whose planner misjudges the night's rows.

    Expected more rows than the night has: the history has grown since the statistics counted its
    nights, and the rest of what they say still holds, so only the workflow id is sampled again
    (300 rows at its target of 1, migration 073: a tenth of the table's sample). Expected fewer:
    the night is new to statistics that may never have seen a night, or larger than the nights
    before, and every column is sampled."""
    if estimated > actual:
        await conn.execute(f"ANALYZE {table} (workflow_id)")
    else:
        await conn.execute(f"ANALYZE {table}")


async def refresh_statistics(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str,
                             *tables: str) -> list[str]:
    """Refresh the statistics of the given working tables where the planner misjudges how many
    rows `workflow_id` has in them (outside the caller's write transaction: it only reads).
    Returns the tables it analyzed. The estimates and counts of all the tables are asked in one
    statement; given the pool, each table to analyze then is analyzed on a connection of its own,
    all at once: one ANALYZE keeps one backend busy, and the steps that refresh three or four
    tables waited for them one after another while the machine's other core idled."""
    unknown = set(tables) - WORKING_TABLES
    if unknown:
        raise ValueError(f"not a working table: {', '.join(sorted(unknown))}")
    tables = tuple(dict.fromkeys(tables))
    found = await _estimates(conn, tables, workflow_id)
    stale = [t for t in tables if is_stale(*found[t])]

    async def one(table: str) -> None:
        if isinstance(conn, asyncpg.Pool):
            async with conn.acquire() as c:
                await _analyze(c, table, *found[table])
        else:
            await _analyze(conn, table, *found[table])

    if isinstance(conn, asyncpg.Pool):
        await asyncio.gather(*(one(t) for t in stale))
    else:
        for t in stale:
            await one(t)
    return stale
