"""A seeded month is written whole, as planned, in one transaction: every row the plan makes is in
Postgres (receipts on their own dates), nothing else, and a month over nights that already have
invoices writes nothing at all."""

from __future__ import annotations

import asyncpg
import pytest

from recon.store.seeding import numbers_per_supplier
from recon.tools.seed import SeedError, night_chunks, seed_month, story_chunk
from recon.tools.seed_months import month_result, plan_month, short_lines

DAY = "2030-07-01"


def planned(plan) -> dict[str, list[tuple]]:
    rows: dict[str, list] = {"purchase_orders": [], "po_lines": [], "goods_receipts": [],
                             "invoices": []}
    chunks = [c for night in plan.regular for c in night_chunks(night)] + [story_chunk(plan)]
    for chunk in chunks:
        for name, found in rows.items():
            found.extend(tuple(r) for r in getattr(chunk, name))
    return {name: sorted(found, key=repr) for name, found in rows.items()}


async def written(pool: asyncpg.Pool, warehouse: str) -> dict[str, list[tuple]]:
    pos = "SELECT po_number FROM purchase_orders WHERE warehouse = $1"
    queries = {
        "purchase_orders": "SELECT po_number, supplier_id, warehouse, ordered_on FROM purchase_orders"
                           " WHERE warehouse = $1",
        "po_lines": f"SELECT po_number, sku, description, qty_ordered, unit_price_paise FROM po_lines"
                    f" WHERE po_number IN ({pos})",
        "goods_receipts": "SELECT po_number, sku, warehouse, qty_received, received_on"
                          " FROM goods_receipts WHERE warehouse = $1",
        "invoices": "SELECT invoice_no, supplier_id, business_date, warehouse, document FROM invoices"
                    " WHERE warehouse = $1",
    }
    return {name: sorted((tuple(r) for r in await pool.fetch(sql, warehouse)), key=repr)
            for name, sql in queries.items()}


async def test_the_month_writes_exactly_its_plan(pool: asyncpg.Pool) -> None:
    result = await seed_month(pool, DAY, "month-a", 4, invoices=30, mismatches=4, seed=5)
    plan = plan_month(DAY, "month-a", 4, 30, 4, 5, shared_numbers=await _shared(pool))
    rows = planned(plan)
    assert await written(pool, "month-a") == rows
    short = short_lines(plan)
    assert result == month_result(plan, {(po, sku): qty for po, sku, _d, qty, _p in rows["po_lines"]
                                         if (po, sku) in short})
    dates = {r[4].isoformat() for r in (await written(pool, "month-a"))["goods_receipts"]}
    assert dates == set(plan.dates), "receipts are dated on each of the nights"
    per_night = {str(r["business_date"]): r["n"] for r in await pool.fetch(
        "SELECT business_date, count(*) AS n FROM invoices WHERE warehouse = 'month-a' GROUP BY 1")}
    assert per_night == {n.business_date: n.invoices for n in result.nights}


async def _shared(pool: asyncpg.Pool) -> bool:
    async with pool.acquire() as conn:
        return await numbers_per_supplier(conn)


async def test_a_month_over_a_night_already_seeded_writes_nothing(pool: asyncpg.Pool) -> None:
    from recon.tools.seed import seed_night

    await seed_night(pool, "2030-07-03", "month-b", 10, 1, 1)
    before = await written(pool, "month-b")
    with pytest.raises(SeedError, match="2030-07-03 at month-b already has 10 invoices"):
        await seed_month(pool, DAY, "month-b", 3, invoices=10, mismatches=1, seed=1)
    assert await written(pool, "month-b") == before
