"""Every column of the tables a night ANALYZEs keeps the small statistics target of migration 070,
so ANALYZE reads 3,000 pages whatever the history (docs/design.md §8). A column added later
without it would bring the 30,000-page sample back: this test names it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import asyncpg
import pytest

from recon.store.statistics import WORKING_TABLES, is_stale, refresh_statistics


async def test_every_working_column_samples_small(pool: asyncpg.Pool) -> None:
    rows = await pool.fetch(
        "SELECT c.relname, a.attname, a.attstattarget FROM pg_attribute a"
        " JOIN pg_class c ON c.oid = a.attrelid"
        " WHERE c.relname = ANY($1::text[]) AND c.relkind = 'r'"
        " AND a.attnum > 0 AND NOT a.attisdropped", sorted(WORKING_TABLES))
    assert {r["relname"] for r in rows} == WORKING_TABLES
    wide = [f"{r['relname']}.{r['attname']} ({r['attstattarget']})" for r in rows
            if r["attstattarget"] is None or not 0 <= r["attstattarget"] <= 10]
    assert not wide, "columns sampled at the default target: " + ", ".join(wide)


@contextlib.asynccontextmanager
async def scratch_line_matches(pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
    """A connection inside a transaction that is rolled back, with `line_matches` truncated in it
    (a new, empty file: other tests' rows, live or dead, would move the planner's rows-per-page),
    so only the rows a test writes are in the table its estimates come from."""
    async with pool.acquire() as conn:
        scratch = conn.transaction()
        await scratch.start()
        try:
            await conn.execute("TRUNCATE line_matches")
            yield conn
        finally:
            await scratch.rollback()


async def _fill(conn: asyncpg.Connection, run: str, lines: int) -> None:
    await conn.execute(
        "INSERT INTO line_matches (workflow_id, invoice_no, line_no, po_number, sku,"
        " po_price_paise) SELECT $1, 'INV-ST-' || (g / 4), g % 4, 'PO-ST-1', 'SKU-ST',"
        " 100 FROM generate_series(1, $2) g", run, lines)


async def test_a_night_is_still_estimated_by_its_rows(pool: asyncpg.Pool) -> None:
    """The small sample still tells a night's rows from the table's: the planner's estimate for
    one night's workflow id is near its count, not the whole table's or one row, whether the night
    is the table's most common value or one of the rest (the workflow id keeps one most common
    value, migration 073: the rest share what it leaves). On a scratch table, so that only these
    nights are in it."""
    big = "recon-2030-03-01-statistics"
    async with scratch_line_matches(pool) as conn:
        await _fill(conn, big, 12000)
        for night in range(2, 6):
            await _fill(conn, f"recon-2030-03-{night:02d}-statistics", 4000)
        await conn.execute("ANALYZE line_matches")
        for run, lines in ((big, 12000), ("recon-2030-03-03-statistics", 4000)):
            plan = await conn.fetchval(
                "EXPLAIN (FORMAT JSON) SELECT * FROM line_matches WHERE workflow_id = $1", run)
            estimated = json.loads(plan)[0]["Plan"]["Plan Rows"]
            assert lines / 2 <= estimated <= lines * 2, (run, estimated)


def test_an_estimate_is_stale_only_when_far_off() -> None:
    """The refresh rule: off by `STALE_FACTOR` or more, counting at least `FEW_ROWS`."""
    assert is_stale(1, 25_000)  # a first night: the planner guesses one row
    assert is_stale(25_000, 250_000)  # a 100k night after 10k nights
    assert is_stale(250_000, 25_000)  # a small night after big ones
    assert not is_stale(24_324, 24_689)  # a month's next night, as measured
    assert not is_stale(13_000, 25_000)  # within the factor
    assert not is_stale(1, 3)  # a few held lines: nothing a plan would change for
    assert is_stale(1, 200)


async def test_a_night_like_the_ones_before_is_not_analyzed_again(pool: asyncpg.Pool) -> None:
    """On statistics that already hold many nights, the planner expects a night it has never seen
    to hold one night's rows: the refresh leaves it alone (no 3,000-page sample, which a month of
    history reads mostly from disk). A night ten times larger is analyzed. On a scratch table
    (`scratch_line_matches`)."""
    async with scratch_line_matches(pool) as conn:
        for night in range(1, 16):
            await _fill(conn, f"recon-2030-04-{night:02d}-statistics", 2000)
        await conn.execute("ANALYZE line_matches")

        like_the_ones_before = "recon-2030-04-16-statistics"
        await _fill(conn, like_the_ones_before, 2000)
        assert await refresh_statistics(conn, like_the_ones_before, "line_matches") == []

        bigger = "recon-2030-04-17-statistics"
        await _fill(conn, bigger, 20_000)
        assert await refresh_statistics(conn, bigger, "line_matches") == ["line_matches"]
        # Now the statistics know it: asked again, there is nothing to do.
        assert await refresh_statistics(conn, bigger, "line_matches") == []


async def test_a_history_grown_past_its_statistics_is_counted_again(pool: asyncpg.Pool) -> None:
    """Statistics that counted four nights, on a table of twelve, expect a new night to hold three
    nights' rows: refreshed (the workflow id alone), after which the estimate is one night's."""
    async with scratch_line_matches(pool) as conn:
        for night in range(1, 5):
            await _fill(conn, f"recon-2030-06-{night:02d}-statistics", 2000)
        await conn.execute("ANALYZE line_matches")
        for night in range(5, 13):
            await _fill(conn, f"recon-2030-06-{night:02d}-statistics", 2000)

        grown = "recon-2030-06-13-statistics"
        await _fill(conn, grown, 2000)
        assert await refresh_statistics(conn, grown, "line_matches") == ["line_matches"]
        assert await refresh_statistics(conn, grown, "line_matches") == []


async def test_a_first_night_is_analyzed(pool: asyncpg.Pool) -> None:
    """Statistics that have never seen a night estimate one row for it: refreshed."""
    async with scratch_line_matches(pool) as conn:
        await conn.execute("ANALYZE line_matches")
        first = "recon-2030-05-01-statistics"
        await _fill(conn, first, 3000)
        assert await refresh_statistics(conn, first, "line_matches") == ["line_matches"]


async def test_only_working_tables_are_refreshed(pool: asyncpg.Pool) -> None:
    with pytest.raises(ValueError, match="not a working table: suppliers"):
        await refresh_statistics(pool, "recon-2030-05-01-statistics", "suppliers")


async def test_the_estimates_of_many_tables_are_asked_in_one_statement(pool: asyncpg.Pool) -> None:
    """The statement-count guard of the refresh (migration 100): however many tables a step names,
    one statement asks their estimates and counts, then only the tables it misjudges are analyzed
    (whether any is depends on what other tests left in the tables)."""
    statements: list[str] = []

    def log(record: object) -> None:
        statements.append(record.query)  # type: ignore[attr-defined]

    async with pool.acquire() as conn:
        conn.add_query_logger(log)
        analyzed = await refresh_statistics(conn, "recon-2030-07-01-statistics", "line_matches",
                                            "comparisons", "mismatches", "parked_items")
        await asyncio.sleep(0.1)  # the logger is called soon after each statement
        conn.remove_query_logger(log)
    asked = [s for s in statements if not s.startswith("ANALYZE")]
    assert len(asked) == 1 and "recon_night_estimates" in asked[0], statements
    assert len(statements) - len(asked) == len(analyzed), statements
