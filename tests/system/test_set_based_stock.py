"""Step 8 books stock set-based (one INSERT ... SELECT per seq range). It must write exactly the
rows the row-by-row path (`recon.store.stock.move_stock`) writes, keep one movement per key through a
redo and a crash, refuse a stale fence, and fail loudly on a key holding another quantity."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from temporalio.client import Client

from recon.domain.errors import StaleAttempt, VerificationFailed
from recon.domain.keys import fence_scope, movement_key
from recon.store.fences import take_fence
from recon.store.stock import (
    StockMovement,
    move_reconciled_range,
    move_stock,
    verify_movements,
)
from recon.tools.seed import seed_night
from tests.helpers import inprocess_worker, settings_for, start

_ROWS = """
SELECT substr(key, length($1) + 1) AS key_tail, warehouse, sku, qty, supplier_id, invoice_no,
       line_no, note, reverses
FROM stock_movements WHERE workflow_id = $1 ORDER BY key
"""


async def _levels(pool: asyncpg.Pool, warehouse: str) -> dict[str, int]:
    rows = await pool.fetch(
        "SELECT sku, qty_on_hand FROM stock_levels WHERE warehouse = $1", warehouse)
    return {r["sku"]: r["qty_on_hand"] for r in rows}


async def _row_by_row(pool: asyncpg.Pool, source_wf: str, wf: str, warehouse: str) -> None:
    """What step 8 wrote before it was set-based: the run's comparisons, copied under another
    workflow id, booked row by row through `move_stock` as the old activity built them."""
    await pool.execute(
        "INSERT INTO comparisons SELECT $2, seq, invoice_no, line_no, supplier_id, sku, "
        "invoiced_qty, received_qty, invoice_price_paise, po_price_paise "
        "FROM comparisons WHERE workflow_id = $1", source_wf, wf)
    fence = await take_fence(pool, fence_scope(wf, "stock"))
    rows = await pool.fetch("SELECT * FROM comparisons WHERE workflow_id = $1 ORDER BY seq", wf)
    async with pool.acquire() as conn:
        for start in range(0, len(rows), 7):
            await move_stock(conn, [
                StockMovement(
                    key=movement_key(wf, r["invoice_no"], r["line_no"]), workflow_id=wf,
                    warehouse=warehouse, sku=r["sku"], qty=r["received_qty"],
                    supplier_id=r["supplier_id"], invoice_no=r["invoice_no"],
                    line_no=r["line_no"],
                    note=f"received against {r['invoice_no']} line {r['line_no']}, reconciled",
                )
                for r in rows[start:start + 7]
            ], fence)


async def test_set_based_step_8_writes_what_the_row_by_row_path_wrote(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=90, mismatches=12)
    seeded = await _levels(pool, warehouse)
    settings = settings_for(queue, post_batch_size=7)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await asyncio.wait_for(handle.result(), 60)
    new_rows = [tuple(r) for r in await pool.fetch(_ROWS, handle.id)]
    # How far each level moved; the seed also stocks SKUs no line of the night bills (they moved 0).
    new_levels = {sku: qty - seeded.get(sku, 0) for sku, qty in (await _levels(pool, warehouse)).items()
                  if qty != seeded.get(sku, 0)}
    assert len(new_rows) == await pool.fetchval(
        "SELECT count(*) FROM comparisons WHERE workflow_id = $1", handle.id) > 100

    reference_wf, reference_warehouse = f"{handle.id}-rowwise", f"{warehouse}-rowwise"
    await _row_by_row(pool, handle.id, reference_wf, reference_warehouse)
    old_rows = [(r[0], warehouse, *r[2:]) for r in await pool.fetch(_ROWS, reference_wf)]
    assert new_rows == old_rows
    assert new_levels == {sku: qty for sku, qty in (await _levels(pool, reference_warehouse)).items()
                          if qty != 0}


async def test_a_range_is_booked_once_fenced_and_checked(pool: asyncpg.Pool) -> None:
    wf, warehouse = "set-based-range-test", "set-based-wh"
    await pool.execute(
        "INSERT INTO comparisons SELECT $1, g, 'INV-' || g, 1, 'S001', 'SKU-' || (g % 3), 4, "
        "g, 100, 100 FROM generate_series(1, 10) g", wf)
    fence = await take_fence(pool, fence_scope(wf, "stock"))
    async with pool.acquire() as conn:
        first = await move_reconciled_range(conn, wf, warehouse, 0, 6, fence)
        again = await move_reconciled_range(conn, wf, warehouse, 3, 10, fence)
    assert (first.wanted, first.inserted) == (6, 6)
    assert (again.wanted, again.inserted) == (4, 4), "seq 4-6 are live already: not wanted again"
    assert await _levels(pool, warehouse) == {"SKU-0": 3 + 6 + 9, "SKU-1": 1 + 4 + 7 + 10,
                                              "SKU-2": 2 + 5 + 8}

    newer = await take_fence(pool, fence_scope(wf, "stock"))
    await pool.execute("DELETE FROM stock_movements WHERE key = $1", f"{wf}:stock:INV-10:1")
    async with pool.acquire() as conn:
        with pytest.raises(StaleAttempt):
            await move_reconciled_range(conn, wf, warehouse, 0, 10, fence)
        assert await pool.fetchval(
            "SELECT count(*) FROM stock_movements WHERE workflow_id = $1", wf) == 9
        await pool.execute("UPDATE stock_movements SET qty = 99 WHERE key = $1",
                           f"{wf}:stock:INV-2:1")
        # A live movement is never written again (whatever it holds): the range books only the
        # missing line, and the closing check is what catches the changed quantity.
        refilled = await move_reconciled_range(conn, wf, warehouse, 0, 10, newer)
        assert (refilled.wanted, refilled.inserted) == (1, 1)
        with pytest.raises(VerificationFailed, match="1 with a different quantity"):
            await verify_movements(conn, wf)
    assert await pool.fetchval(
        "SELECT count(*) FROM stock_movements WHERE workflow_id = $1", wf) == 10


async def test_worker_killed_inside_step_8_books_every_line_once(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=8)
    seeded = await _levels(pool, warehouse)
    doomed = spawn_worker(queue, RECON_FAILPOINTS="update_stock:40", RECON_POST_BATCH="10")
    handle = await start(client, settings_for(queue, post_batch_size=10), day, warehouse)
    assert await doomed.wait_exit(60) == 137
    booked = [r["seq"] for r in await pool.fetch(
        "SELECT c.seq FROM stock_movements m JOIN comparisons c ON c.workflow_id = m.workflow_id"
        " AND c.invoice_no = m.invoice_no AND c.line_no = m.line_no"
        " WHERE m.workflow_id = $1", handle.id)]
    # Two lanes book ranges side by side (activities/lanes.py): when the lane at entry 40 dies,
    # the other may have committed any of the ranges before it, but each range is all or nothing
    # and the range holding the failpoint never commits.
    assert booked and not [seq for seq in booked if 30 < seq <= 40], booked
    ranges = {(seq - 1) // 10 for seq in booked}
    assert ranges <= {0, 1, 2} and len(booked) == 10 * len(ranges), sorted(booked)

    spawn_worker(queue)
    await asyncio.wait_for(handle.result(), 60)
    lines = await pool.fetchval(
        "SELECT count(*) FROM comparisons WHERE workflow_id = $1", handle.id)
    assert await pool.fetchval(
        "SELECT count(DISTINCT key) FROM stock_movements WHERE workflow_id = $1", handle.id
    ) == lines
    moved = await pool.fetch(
        "SELECT sku, sum(qty) AS qty FROM stock_movements WHERE warehouse = $1 GROUP BY sku",
        warehouse)
    levels = await _levels(pool, warehouse)
    assert {r["sku"]: r["qty"] for r in moved} == {
        sku: qty - seeded.get(sku, 0) for sku, qty in levels.items() if qty != seeded.get(sku)
    }, "levels moved once per movement"
