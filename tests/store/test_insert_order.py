"""The store's multi-row writes take their keys in one order, whatever plan Postgres picks.

Two writers of overlapping keys (a takeover and a woken worker, two undo attempts, two lanes)
each lock a key as they insert it; they wait for each other without deadlocking only if both go
through the keys in the same order. These tests force every join method Postgres has and check,
by what it does and by its plan, that the order is the key order: issue 44 item 5 failed CI
because a Hash Right Join inserted a sorted batch backwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import date

import asyncpg
import pytest

from recon.domain.keys import adjustment_key, fence_scope
from recon.store import credit_notes, ledger, ledger_postings, model_bill, seeding, stock
from recon.store.fences import take_fence
from recon.store.ledger import LedgerEntry, insert_arguments, post_entries
from tests.conftest import Database

# One join method left to the planner at a time, and the planner's own choice.
JOIN_METHODS = {
    "planner": "",
    "nested-loop": "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off",
    "hash": "SET LOCAL enable_nestloop = off; SET LOCAL enable_mergejoin = off",
    "merge": "SET LOCAL enable_nestloop = off; SET LOCAL enable_hashjoin = off",
}


def _entries(workflow_id: str, n: int) -> list[LedgerEntry]:
    return [LedgerEntry(
        reference=adjustment_key(workflow_id, f"INV-{line % 7:03d}", line, "qty"),
        workflow_id=workflow_id, invoice_no=f"INV-{line % 7:03d}", supplier_id="SUP-ORDER",
        line_no=line, kind="qty", amount_paise=-(100 + line), memo=f"order line {line}",
    ) for line in range(1, n + 1)]


@pytest.fixture
async def conn(database: Database, pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
    """A connection of the test's own (the pool's fixture migrated the database): the SET LOCALs
    and plans never reach the shared pool."""
    conn = await asyncpg.connect(database.url)
    try:
        yield conn
    finally:
        await conn.close()


async def _force(conn: asyncpg.Connection, method: str) -> None:
    """In the caller's transaction: one join method, and a plan made for these parameters."""
    await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
    if JOIN_METHODS[method]:
        await conn.execute(JOIN_METHODS[method])


async def _filler(conn: asyncpg.Connection, rows: int) -> None:
    """Rows the batch is joined against, in the caller's (rolled back) transaction: with a
    ledger much larger than the batch, a hash join hashes the batch (a Hash Right Join), the
    plan that emitted a sorted batch backwards."""
    await conn.execute(
        "INSERT INTO ledger_entries (reference, workflow_id, invoice_no, supplier_id, line_no,"
        " kind, amount_paise) SELECT 'order-filler-' || $1 || '-' || g, 'order-filler-' || $1,"
        " 'INV', 'SUP-ORDER', g, 'qty', -g FROM generate_series(1, $2) AS g",
        uuid.uuid4().hex, rows)


@pytest.mark.parametrize("method", JOIN_METHODS)
async def test_the_ledger_inserts_a_batch_in_key_order_under_every_join_method(
    conn: asyncpg.Connection, method: str,
) -> None:
    """RETURNING yields each row as the INSERT writes it: the order written is the key order
    (bytewise), given a batch in reverse key order, whatever join the plan uses."""
    entries = sorted(_entries(f"order-{uuid.uuid4()}", 40), key=lambda e: e.reference,
                     reverse=True)
    tx = conn.transaction()
    await tx.start()
    try:
        await _filler(conn, 5000)
        await _force(conn, method)
        written = [r["reference"] for r in
                   await conn.fetch(ledger._INSERT, *insert_arguments(entries, None))]
    finally:
        await tx.rollback()
    assert written == sorted((e.reference for e in entries), key=lambda r: r.encode())


def _nodes(plan: dict) -> Iterator[dict]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


# Nodes that pass their one input's rows on in the order they come (a projection, no more).
_PASS_THROUGH = ("Subquery Scan", "Result")


async def _insert_feeds(conn: asyncpg.Connection, query: str, table: str, *args: object) -> dict:
    """The first node under the plan's INSERT into `table` that is more than a projection."""
    plan = json.loads(await conn.fetchval("EXPLAIN (FORMAT JSON) " + query, *args))[0]["Plan"]
    insert = next(n for n in _nodes(plan)
                  if n.get("Operation") == "Insert" and n.get("Relation Name") == table)
    feed = insert["Plans"][0]
    while feed["Node Type"] in _PASS_THROUGH and len(feed.get("Plans", [])) == 1:
        feed = feed["Plans"][0]
    return feed


@pytest.mark.parametrize("method", JOIN_METHODS)
async def test_every_keyed_multi_row_insert_is_fed_by_a_bytewise_sort(
    conn: asyncpg.Connection, method: str,
) -> None:
    """Nothing between the sort and the INSERT can reorder rows: the node right under each
    INSERT is a Sort on the key, COLLATE "C", under every join method."""
    entries = _entries(f"plan-{uuid.uuid4()}", 5)
    moves = [stock.StockMovement(f"m-{i}", "w", "WH", "SKU", 1, "S", "I", i, "") for i in range(5)]
    move_args = [list(c) for c in zip(*[
        (m.key, m.workflow_id, m.warehouse, m.sku, m.qty, m.supplier_id, m.invoice_no, m.line_no,
         m.note, m.reverses) for m in moves], strict=True)]
    cases = [
        (ledger._INSERT, "ledger_entries", insert_arguments(entries, None), "x.r"),
        (stock._MOVE, "stock_movements", [*move_args, None], "x.k"),
        (stock._MOVE_RANGE, "stock_movements",
         ["w", 0, 10, "WH", "scope", 1, 1, None, True, "%s/%s"], "w.key"),
        (stock._MOVE, "stock_levels", [*move_args, None], "moved"),
        (seeding._IMPORT_INVOICES, "invoices",
         [["I-2", "I-1"], ["S", "S"], [date(2026, 1, 1)] * 2, ["WH"] * 2, ["", ""]], "x.s"),
        (credit_notes._INSERT, "credit_notes",
         [["S"], ["C-1"], [date(2026, 1, 1)], ["WH"], [None], ["ubl"], ["f"], ["h"], [""], [1],
          ["INR"], [1], [""]], "x.s"),
        (ledger_postings._ENQUEUE_LIVE, "ledger_postings", ["w", None, "tryton"], "l.reference"),
        (ledger_postings._ENQUEUE_REVERSALS, "ledger_postings", ["w", ["r"], "tryton"],
         "r.reference"),
    ]
    async with conn.transaction():
        await _force(conn, method)
        for query, table, args, key in cases:
            feed = await _insert_feeds(conn, query, table, *args)
            assert feed["Node Type"] == "Sort", (table, feed["Node Type"])
            assert feed["Sort Key"][0].startswith(key), (table, feed["Sort Key"])
            assert feed["Sort Key"][0].endswith('COLLATE "C"'), (table, feed["Sort Key"])


LOCKING_UPDATES = {
    "ledger_postings.mark_verified": (ledger_postings._MARK_VERIFIED, [["a", "b"]],
                                      'ledger_postings.reference COLLATE "C"'),
    "model_bill.mark_lost": (model_bill.MARK_LOST, ["w", ["I-1", "I-2"]], "model_calls.id"),
}


@pytest.mark.parametrize("name", LOCKING_UPDATES)
async def test_multi_row_updates_lock_their_rows_in_key_order_before_they_change_them(
    conn: asyncpg.Connection, name: str,
) -> None:
    """The UPDATE's rows come from a FOR UPDATE over a Sort: locked one by one in key order."""
    query, args, key = LOCKING_UPDATES[name]
    plan = json.loads(await conn.fetchval("EXPLAIN (FORMAT JSON) " + query, *args))[0]["Plan"]
    lock = next(n for n in _nodes(plan) if n["Node Type"] == "LockRows")
    assert lock["Plans"][0]["Node Type"] == "Sort"
    assert lock["Plans"][0]["Sort Key"][0].startswith(key), lock["Plans"][0]["Sort Key"]


# -------------------------------------------------------------------------- the race itself
ROUNDS = 3
BATCH = 150


@pytest.fixture
async def big_ledger(pool: asyncpg.Pool) -> AsyncIterator[None]:
    """A ledger much larger than a batch, for the test's length: a hash join then hashes the
    batch (a Hash Right Join), the plan that wrote a sorted batch backwards."""
    workflow_id = f"order-filler-{uuid.uuid4()}"
    await pool.execute(
        "INSERT INTO ledger_entries (reference, workflow_id, invoice_no, supplier_id, line_no,"
        " kind, amount_paise) SELECT $1 || '/' || g, $1, 'INV', 'SUP-ORDER', g, 'qty', -g"
        " FROM generate_series(1, 50000) AS g", workflow_id)
    try:
        yield
    finally:
        await pool.execute("DELETE FROM ledger_entries WHERE workflow_id = $1", workflow_id)


async def _until_blocked(pool: asyncpg.Pool, waiter: int, by: int | None = None,
                         timeout: float = 30) -> list[int]:
    """Wait until backend `waiter` waits on a lock (held by backend `by`, if given)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        holders = await pool.fetchval("SELECT pg_blocking_pids($1)", waiter)
        if holders and (by is None or by in holders):
            return holders
        if loop.time() > deadline:
            raise AssertionError(f"backend {waiter} never waited (on {by})")
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("repeat", range(int(os.environ.get("RECON_RACE_REPEAT", "1"))))
async def test_posters_of_overlapping_batches_in_opposite_orders_wait_instead_of_deadlocking(
    database: Database, pool: asyncpg.Pool, big_ledger: None, repeat: int,
) -> None:
    """The CI failure of issue 44, made to happen every time. Poster A has the lower two thirds
    of the keys, poster B the upper two thirds, given in reverse and run with only a hash join
    allowed (the plan that emits a batch backwards). A third transaction holds a key of the
    shared third, uncommitted, so A stops on it with the keys below it in hand. Then B starts.
    Written in the order given or the plan's, B would take the keys above from the top down and
    stop on the same key: when the third transaction rolls back, A and B each hold keys the other
    needs, and Postgres kills one with a deadlock. In key order B's first key is A's, so B waits
    for A, and once A commits B skips the keys A wrote and writes the rest."""
    for round_no in range(ROUNDS):
        workflow_id = f"opposite-{round_no}-{uuid.uuid4()}"
        entries = sorted(_entries(workflow_id, BATCH), key=lambda e: e.reference.encode())
        lower, upper = entries[:BATCH * 2 // 3], entries[BATCH // 3:]
        held = entries[BATCH // 2]
        fence = await take_fence(pool, fence_scope(workflow_id, "ledger"))
        a = await asyncio.wait_for(asyncpg.connect(database.url), 30)
        b = await asyncio.wait_for(asyncpg.connect(database.url), 30)
        blocker = await asyncio.wait_for(asyncpg.connect(database.url), 30)
        try:
            await b.execute(JOIN_METHODS["hash"].replace("SET LOCAL", "SET"))
            stall = blocker.transaction()
            await stall.start()
            await blocker.execute(ledger._INSERT, *insert_arguments([held], fence))
            poster_a = asyncio.create_task(post_entries(a, lower, fence))
            await _until_blocked(pool, a.get_server_pid(), by=blocker.get_server_pid())
            poster_b = asyncio.create_task(post_entries(b, upper[::-1], fence))
            await _until_blocked(pool, b.get_server_pid())
            await stall.rollback()
            new = await asyncio.wait_for(asyncio.gather(poster_a, poster_b), 60)
        finally:
            for conn in (a, b, blocker):
                await conn.close()
        rows = await pool.fetch(
            "SELECT reference FROM ledger_entries WHERE workflow_id = $1", workflow_id)
        assert sorted(r["reference"] for r in rows) == sorted(e.reference for e in entries)
        # A wrote all of its keys; B only those above A's: every key was written once.
        assert new == [len(lower), BATCH - len(lower)], f"round {round_no}: {new}"
