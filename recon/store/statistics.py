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
import json

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


async def _estimate_and_count(conn: asyncpg.Connection, table: str,
                              workflow_id: str) -> tuple[float, int]:
    plan = await conn.fetchval(
        f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {table} WHERE workflow_id = $1", workflow_id)
    estimated = float(json.loads(plan)[0]["Plan"]["Plan Rows"])
    actual = await conn.fetchval("SELECT recon_night_rows($1, $2)", table, workflow_id)
    return estimated, int(actual)


async def _refresh_one(conn: asyncpg.Connection, table: str, workflow_id: str) -> bool:
    """ANALYZE one table if the planner misjudges the night's rows in it; True when it did.

    Expected more rows than the night has: the history has grown since the statistics counted its
    nights, and the rest of what they say still holds, so only the workflow id is sampled again
    (300 rows at its target of 1, migration 073: a tenth of the table's sample). Expected fewer:
    the night is new to statistics that may never have seen a night, or larger than the nights
    before, and every column is sampled."""
    estimated, actual = await _estimate_and_count(conn, table, workflow_id)
    if not is_stale(estimated, actual):
        return False
    if estimated > actual:
        await conn.execute(f"ANALYZE {table} (workflow_id)")
    else:
        await conn.execute(f"ANALYZE {table}")
    return True


async def refresh_statistics(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str,
                             *tables: str) -> list[str]:
    """Refresh the statistics of the given working tables where the planner misjudges how many
    rows `workflow_id` has in them (outside the caller's write transaction: it only reads).
    Returns the tables it analyzed. Given the pool, each table is checked on a connection of its
    own, all at once: one ANALYZE keeps one backend busy, and the steps that refresh three or four
    tables waited for them one after another while the machine's other core idled."""
    unknown = set(tables) - WORKING_TABLES
    if unknown:
        raise ValueError(f"not a working table: {', '.join(sorted(unknown))}")

    async def one(table: str) -> bool:
        if isinstance(conn, asyncpg.Pool):
            async with conn.acquire() as c:
                return await _refresh_one(c, table, workflow_id)
        return await _refresh_one(conn, table, workflow_id)

    if isinstance(conn, asyncpg.Pool):
        done = await asyncio.gather(*(one(t) for t in tables))
    else:
        done = [await one(t) for t in tables]
    return [t for t, analyzed in zip(tables, done, strict=True) if analyzed]
