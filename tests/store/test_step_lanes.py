"""Steps 3, 4 and 5 on two connections (recon/store/lanes.py, matching.py, weighing.py): the
matches and the snapshot taken in two lanes are those taken in one, a lane committed before a
crash is never taken twice, and step 5's fingerprints, written on a second connection while it
weighs, are one per bill, a retry adding only the missing."""

from __future__ import annotations

import uuid
from datetime import date

import asyncpg
import pytest

from recon.domain.match_policy import MatchPolicy
from recon.store import lanes, matching
from recon.store.db import lock_run
from recon.store.weighing import compare_quantities

DAY = date(2030, 5, 6)
WINDOW = MatchPolicy().invoice_date_window_days
ORDERS = 40


async def _night(pool: asyncpg.Pool, matched: bool = True) -> tuple[str, str, str]:
    """ORDERS orders of three lines each, received in part; one earlier acceptance; and a
    night that bills every line of every order, one invoice per order (and, unless `matched`
    is set, its matches as step 3 leaves them)."""
    tag = uuid.uuid4().hex[:8].upper()
    supplier, warehouse = f"SL{tag}", f"wl{tag.lower()}"
    wf = f"recon-{DAY}-{warehouse}"
    await pool.execute("INSERT INTO suppliers (supplier_id, name, email) VALUES"
                       " ($1, $1, 'a@b.example')", supplier)
    pos = [f"PO-L{tag}-{n:04d}" for n in range(ORDERS)]
    await pool.executemany(
        "INSERT INTO purchase_orders (po_number, supplier_id, warehouse, ordered_on)"
        " VALUES ($1, $2, $3, $4)", [(po, supplier, warehouse, DAY) for po in pos])
    await pool.executemany(
        "INSERT INTO po_lines (po_number, sku, description, qty_ordered, unit_price_paise)"
        " VALUES ($1, $2, 'x', $3, 100)",
        [(po, f"SKU-{k}", 10 + n + k, ) for n, po in enumerate(pos) for k in range(3)])
    await pool.executemany(
        "INSERT INTO goods_receipts (po_number, sku, warehouse, qty_received, received_on)"
        " VALUES ($1, $2, $3, $4, $5)",
        [(po, f"SKU-{k}", warehouse, 5 + n % 7, DAY) for n, po in enumerate(pos)
         for k in range(2)])
    await pool.execute(
        "INSERT INTO acceptances (workflow_id, invoice_no, line_no, warehouse, business_date,"
        " supplier_id, po_number, sku, qty_accepted) VALUES ($1, $4 || ':INV-EARLIER', 1, $2, $3,"
        " $4, $5, 'SKU-0', 3)", f"recon-2030-05-01-{warehouse}", warehouse, date(2030, 5, 1),
        supplier, pos[ORDERS - 3])
    lines = [(wf, f"{supplier}:INV-{n:04d}", k + 1, supplier, po, f"SKU-{k}", 4 + k)
             for n, po in enumerate(pos) for k in range(3)]
    await pool.executemany(
        "INSERT INTO invoice_lines (workflow_id, invoice_no, line_no, supplier_id, po_number,"
        " sku, description, qty, unit_price_paise) VALUES ($1, $2, $3, $4, $5, $6, 'x', $7, 100)",
        lines)
    if not matched:
        return wf, warehouse, supplier
    await pool.executemany(
        "INSERT INTO line_matches (workflow_id, invoice_no, line_no, po_number, sku,"
        " po_price_paise, billed_night) VALUES ($1, $2, $3, $4, $5, 100, $6)",
        [(wf, inv, ln, po, sku, DAY) for wf, inv, ln, _, po, sku, _ in lines])
    return wf, warehouse, supplier


def _backends_running(monkeypatch: pytest.MonkeyPatch, method: str, statement: str) -> set[int]:
    """The Postgres backends that run `statement` through `Connection.<method>` from now on."""
    backends: set[int] = set()
    real = getattr(asyncpg.Connection, method)

    async def watched(self: asyncpg.Connection, query: str, *args: object, **kw: object) -> object:
        if query is statement:
            backends.add(self.get_server_pid())
        return await real(self, query, *args, **kw)

    monkeypatch.setattr(asyncpg.Connection, method, watched)
    return backends


async def _snapshot(pool: asyncpg.Pool, wf: str) -> list[tuple]:
    rows = await pool.fetch("SELECT po_number, sku, qty_received, qty_ordered, qty_prior"
                            " FROM stock_snapshots WHERE workflow_id = $1 ORDER BY 1, 2", wf)
    return [tuple(r) for r in rows]


async def _one_lane(pool: asyncpg.Pool, wf: str, warehouse: str) -> list[tuple]:
    """The same night's snapshot taken on one connection, under another workflow id."""
    alone = wf + "-alone"
    await pool.execute(
        "INSERT INTO line_matches SELECT $2, invoice_no, line_no, po_number, sku,"
        " po_price_paise, billed_night, carried_from FROM line_matches WHERE workflow_id = $1",
        wf, alone)
    async with pool.acquire() as conn, conn.transaction():
        await matching.snapshot_missing(conn, alone, warehouse, DAY)
    return await _snapshot(pool, alone)


async def test_two_lanes_take_the_snapshot_one_lane_takes(pool: asyncpg.Pool,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    wf, warehouse, _ = await _night(pool)
    monkeypatch.setattr(lanes, "LANE_LINES", 1)
    backends = _backends_running(monkeypatch, "fetchval", matching._SNAPSHOT)
    assert await matching.read_stock(pool, wf, warehouse, DAY) == ORDERS * 3
    monkeypatch.undo()
    assert len(backends) == 2, "the snapshot was taken on two connections"
    both_lanes = await _snapshot(pool, wf)
    assert both_lanes == await _one_lane(pool, wf, warehouse)
    assert len(both_lanes) == ORDERS * 3
    assert sum(r[4] for r in both_lanes) == 3, "the earlier acceptance counts once"


async def test_a_lane_committed_before_a_crash_is_not_taken_twice(
        pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch) -> None:
    wf, warehouse, _ = await _night(pool)
    monkeypatch.setattr(lanes, "LANE_LINES", 1)

    class Crash(Exception):
        pass

    with pytest.raises(Crash):  # the step's own transaction dies after both lanes ran
        async with pool.acquire() as conn, conn.transaction():
            await lock_run(conn, wf)
            await matching.snapshot_missing(conn, wf, warehouse, DAY, pool)
            raise Crash
    upper_only = await _snapshot(pool, wf)
    assert 0 < len(upper_only) < ORDERS * 3, "the upper lane committed on its own"
    assert await matching.read_stock(pool, wf, warehouse, DAY) == ORDERS * 3
    assert await _snapshot(pool, wf) == await _one_lane(pool, wf, warehouse)
    assert await matching.read_stock(pool, wf, warehouse, DAY) == ORDERS * 3, "taken once"


async def test_fingerprints_written_beside_the_weighing_one_per_bill_and_a_retry_adds_the_missing(
        pool: asyncpg.Pool) -> None:
    wf, warehouse, _ = await _night(pool)
    await matching.read_stock(pool, wf, warehouse, DAY)
    policy = MatchPolicy(receipt_grace_days=0)
    compared = await compare_quantities(pool, wf, DAY, warehouse, policy)
    assert compared == ORDERS * 3
    rows = await pool.fetch("SELECT invoice_no, first_po, fingerprint FROM invoice_fingerprints"
                            " WHERE workflow_id = $1 ORDER BY 1", wf)
    assert len(rows) == ORDERS
    # A retry (the weighing is kept) writes no second fingerprint and keeps the comparisons.
    await pool.execute("DELETE FROM invoice_fingerprints WHERE workflow_id = $1"
                       " AND invoice_no = $2", wf, rows[0]["invoice_no"])
    assert await compare_quantities(pool, wf, DAY, warehouse, policy) == compared
    again = await pool.fetch("SELECT invoice_no, first_po, fingerprint FROM invoice_fingerprints"
                             " WHERE workflow_id = $1 ORDER BY 1", wf)
    assert again == rows, "the missing fingerprint was added, the others kept"


async def _matches(pool: asyncpg.Pool, wf: str) -> tuple[list[tuple], list[tuple]]:
    matches = await pool.fetch("SELECT invoice_no, line_no, po_number, sku, po_price_paise"
                               " FROM line_matches WHERE workflow_id = $1 ORDER BY 1, 2", wf)
    parked = await pool.fetch("SELECT item_key, reason FROM parked_items WHERE workflow_id = $1"
                              " AND step = 'match_orders' ORDER BY 1", wf)
    return [tuple(r) for r in matches], [tuple(r) for r in parked]


async def _night_to_match(pool: asyncpg.Pool) -> tuple[str, str, tuple[list[tuple], list[tuple]]]:
    """A night with two lines no order has (an unknown SKU, an unknown order), and the matches
    and parked lines step 3 gives it on one connection (under another workflow id)."""
    wf, warehouse, supplier = await _night(pool, matched=False)
    await pool.execute(
        "INSERT INTO invoice_lines (workflow_id, invoice_no, line_no, supplier_id, po_number, sku,"
        " description, qty, unit_price_paise) SELECT $1, invoice_no, 9, supplier_id, po_number,"
        " 'SKU-NONE', 'x', 1, 100 FROM invoice_lines WHERE workflow_id = $1 AND line_no = 1"
        " ORDER BY invoice_no LIMIT 1", wf)
    await pool.execute(
        "INSERT INTO invoice_lines (workflow_id, invoice_no, line_no, supplier_id, po_number, sku,"
        " description, qty, unit_price_paise) SELECT $1, invoice_no, 8, supplier_id,"
        " po_number || '-GONE', 'SKU-0', 'x', 1, 100 FROM invoice_lines WHERE workflow_id = $1"
        " AND line_no = 1 ORDER BY invoice_no DESC LIMIT 1", wf)
    alone = f"recon-{DAY}-{warehouse}x"
    await pool.execute(
        "INSERT INTO invoice_lines SELECT $2, invoice_no, line_no, supplier_id, po_number, sku,"
        " description, qty, unit_price_paise FROM invoice_lines WHERE workflow_id = $1", wf, alone)
    await matching.match_orders(pool, alone, DAY, warehouse, WINDOW)
    return wf, warehouse, await _matches(pool, alone)


async def test_two_lanes_match_what_one_lane_matches(pool: asyncpg.Pool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    wf, warehouse, one_lane = await _night_to_match(pool)
    assert len(one_lane[0]) == ORDERS * 3 and len(one_lane[1]) == 2
    monkeypatch.setattr(lanes, "LANE_LINES", 1)
    backends = _backends_running(monkeypatch, "execute", matching._MATCH)
    assert await matching.match_orders(pool, wf, DAY, warehouse, WINDOW) == (ORDERS * 3, 2)
    monkeypatch.undo()
    assert len(backends) == 2, "the lines were matched on two connections"
    xmins = await pool.fetch("SELECT DISTINCT xmin::text FROM line_matches WHERE workflow_id = $1",
                             wf)
    assert len(xmins) == 2, "each lane committed a share of the matches"
    matches, parked = await _matches(pool, wf)
    assert (matches, [p[1] for p in parked]) == (one_lane[0], [p[1] for p in one_lane[1]])
    assert await pool.fetchval("SELECT lines FROM lines_matched WHERE workflow_id = $1",
                               wf) == ORDERS * 3


async def test_a_match_lane_committed_before_a_crash_is_not_matched_twice(
        pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch) -> None:
    wf, warehouse, one_lane = await _night_to_match(pool)
    monkeypatch.setattr(lanes, "LANE_LINES", 1)

    class Crash(Exception):
        pass

    real_fetchval = asyncpg.Connection.fetchval

    async def crash_before_the_mark(self: asyncpg.Connection, query: str, *args: object,
                                    **kw: object) -> object:
        if "INSERT INTO lines_matched" in query:
            raise Crash
        return await real_fetchval(self, query, *args, **kw)

    monkeypatch.setattr(asyncpg.Connection, "fetchval", crash_before_the_mark)
    with pytest.raises(Crash):
        await matching.match_orders(pool, wf, DAY, warehouse, WINDOW)
    monkeypatch.setattr(asyncpg.Connection, "fetchval", real_fetchval)
    upper_only, parked = await _matches(pool, wf)
    assert 0 < len(upper_only) < ORDERS * 3 and parked == [], "only the upper lane committed"
    assert await matching.match_orders(pool, wf, DAY, warehouse, WINDOW) == (ORDERS * 3, 2)
    matches, parked = await _matches(pool, wf)
    assert (matches, [p[1] for p in parked]) == (one_lane[0], [p[1] for p in one_lane[1]])
    assert await matching.match_orders(pool, wf, DAY, warehouse, WINDOW) == (ORDERS * 3, 2), "once"
