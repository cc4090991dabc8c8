"""Every column of the tables a night ANALYZEs keeps the small statistics target of migration 070,
so ANALYZE reads 3,000 pages whatever the history (docs/design.md §8). A column added later
without it would bring the 30,000-page sample back: this test names it."""

from __future__ import annotations

import json

import asyncpg

from recon.store.statistics import WORKING_TABLES


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


async def test_a_night_is_still_estimated_by_its_rows(pool: asyncpg.Pool) -> None:
    """The small sample still tells a night's rows from the table's: the planner's estimate for
    one night's workflow id is near its count, not the whole table's or one row."""
    wf = "recon-2030-03-01-statistics"
    other = "recon-2030-03-02-statistics"
    async with pool.acquire() as conn:
        for run, lines in ((wf, 4000), (other, 12000)):
            await conn.execute(
                "INSERT INTO line_matches (workflow_id, invoice_no, line_no, po_number, sku,"
                " po_price_paise) SELECT $1, 'INV-ST-' || (g / 4), g % 4, 'PO-ST-1', 'SKU-ST',"
                " 100 FROM generate_series(1, $2) g", run, lines)
        try:
            await conn.execute("ANALYZE line_matches")
            plan = await conn.fetchval(
                "EXPLAIN (FORMAT JSON) SELECT * FROM line_matches WHERE workflow_id = $1", wf)
            estimated = json.loads(plan)[0]["Plan"]["Plan Rows"]
            assert 2000 <= estimated <= 8000, estimated
        finally:
            await conn.execute("DELETE FROM line_matches WHERE workflow_id = ANY($1::text[])",
                               [wf, other])
