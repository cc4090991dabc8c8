"""Races against the ledger, run for real on the session's embedded Postgres.

Two posters hitting the same keys at the same moment is not hypothetical here: a Temporal retry,
a worker that was presumed dead but was only paused, and an undo taking over can all post the same
entries concurrently. These tests make that overlap happen and check what the ledger holds after.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path

import asyncpg
import pytest

from recon.domain.errors import KeyPayloadConflict, StaleAttempt
from recon.domain.keys import adjustment_key, fence_scope
from recon.store.fences import take_fence
from recon.store.ledger import LedgerEntry, post_entries
from tests.conftest import Database

ROUNDS = 15
ENTRIES = 40


def _entries(workflow_id: str, n: int = ENTRIES) -> list[LedgerEntry]:
    """n distinct adjustments for one run; amounts differ per line so a mix-up would show."""
    out = []
    for line in range(1, n + 1):
        kind = "qty" if line % 2 else "price"
        invoice = f"INV-{line // 10:03d}"
        out.append(LedgerEntry(
            reference=adjustment_key(workflow_id, invoice, line, kind),
            workflow_id=workflow_id,
            invoice_no=invoice,
            supplier_id="SUP-RACE",
            line_no=line,
            kind=kind,
            amount_paise=-(1000 + 37 * line),
            memo=f"race line {line}",
        ))
    return out


def _batches(entries: list[LedgerEntry], rng: random.Random) -> list[list[LedgerEntry]]:
    """Cut the list into transactions of 1 to 5 entries, in order."""
    out, i = [], 0
    while i < len(entries):
        size = rng.randint(1, 5)
        out.append(entries[i:i + size])
        i += size
    return out


async def _race(
    pool: asyncpg.Pool,
    poster: Callable[[asyncpg.Connection, list[LedgerEntry]], Awaitable[int]],
    entries: list[LedgerEntry],
    rng: random.Random,
) -> list[int]:
    """Two posters, each on its own connection, released together by a barrier; each posts all
    the entries in its own random batches. Returns how many rows each one reported as new."""
    barrier = asyncio.Barrier(2)

    async def one(batches: list[list[LedgerEntry]]) -> int:
        async with pool.acquire() as conn:
            await barrier.wait()
            new = 0
            for batch in batches:
                new += await poster(conn, batch)
            return new

    # The second poster gives each batch backwards: the order a batch arrives in must not matter.
    return list(await asyncio.gather(
        one(_batches(entries, rng)), one([b[::-1] for b in _batches(entries, rng)])))


# ---------------------------------------------------------------------------------------- a.

# RECON_RACE_REPEAT=200 runs the race 200 times in one session; RECON_RACE_BUSY=1 runs it beside a
# second busy process (bench/race_busy.py) burning a core and writing into the same Postgres.
REPEAT = int(os.environ.get("RECON_RACE_REPEAT", "1"))


@pytest.fixture(scope="module")
def busy(database: Database) -> Iterator[None]:
    """The second busy process, for this module's tests, when RECON_RACE_BUSY is set."""
    if not os.environ.get("RECON_RACE_BUSY"):
        yield
        return
    script = Path(__file__).resolve().parents[2] / "bench" / "race_busy.py"
    process = subprocess.Popen([sys.executable, str(script), database.url])
    try:
        yield
        assert process.poll() is None, "the busy process died: the tests ran without it"
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.parametrize("repeat", range(REPEAT))
async def test_racing_posters_write_each_entry_exactly_once(
    pool: asyncpg.Pool, repeat: int, busy: None,
) -> None:
    rng = random.Random(20261013 + repeat)
    both_wrote = 0
    for round_no in range(ROUNDS):
        workflow_id = f"race-{round_no}-{uuid.uuid4()}"
        entries = _entries(workflow_id)
        fence = await take_fence(pool, fence_scope(workflow_id, "ledger"))

        async def poster(conn: asyncpg.Connection, batch: list[LedgerEntry], fence=fence) -> int:
            return await post_entries(conn, batch, fence)

        new = await _race(pool, poster, entries, rng)

        rows = await pool.fetch(
            "SELECT reference, amount_paise, invoice_no, line_no, kind, fence_token"
            " FROM ledger_entries WHERE workflow_id = $1", workflow_id,
        )
        assert len(rows) == ENTRIES, f"round {round_no}: {len(rows)} rows"
        assert len({r["reference"] for r in rows}) == ENTRIES, f"round {round_no}: repeated keys"
        wanted = {e.reference: e for e in entries}
        for r in rows:
            e = wanted[r["reference"]]
            assert (r["amount_paise"], r["invoice_no"], r["line_no"], r["kind"]) == (
                e.amount_paise, e.invoice_no, e.line_no, e.kind,
            ), f"round {round_no}: {r['reference']} holds {dict(r)}"
            assert r["fence_token"] == fence.token
        # Every row was claimed by exactly one of the two posters: nobody counted a row twice.
        assert sum(new) == ENTRIES, f"round {round_no}: posters reported {new} new rows"
        both_wrote += all(new)
    # The race was real: in some rounds each poster won some of the keys.
    assert both_wrote > 0, "the two posters never overlapped; the test proved nothing"


# ---------------------------------------------------------------------------------------- b.

async def test_check_then_insert_without_a_key_duplicates_rows(pool: asyncpg.Pool) -> None:
    """The design we did not choose, run: "SELECT to see whether the reference is there, INSERT if
    not", on a copy of the ledger table that has no primary key.

    Under READ COMMITTED (and under REPEATABLE READ just the same) neither poster can see the
    other's uncommitted row, so both checks say "not there" and both inserts go through. Nothing
    in the check-then-insert pattern can close that window: only a constraint that Postgres itself
    enforces at insert time can, because the second insert then waits for the first to commit and
    is refused. That is why `ledger_entries.reference` is the primary key and `post_entries` is a
    single `INSERT ... ON CONFLICT (reference) DO NOTHING` rather than a lookup in our code.
    """
    table = f"ledger_entries_naive_{uuid.uuid4().hex[:12]}"
    await pool.execute(f"CREATE TABLE {table} (LIKE ledger_entries INCLUDING DEFAULTS)")
    try:
        async def naive_poster(conn: asyncpg.Connection, batch: list[LedgerEntry]) -> int:
            new = 0
            async with conn.transaction():
                for e in batch:
                    there = await conn.fetchval(
                        f"SELECT 1 FROM {table} WHERE reference = $1", e.reference
                    )
                    if there:
                        continue
                    await asyncio.sleep(0.001)  # any gap at all: a GC pause, a slow network hop
                    await conn.execute(
                        f"INSERT INTO {table} (reference, workflow_id, invoice_no, supplier_id,"
                        " line_no, kind, amount_paise, memo) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                        e.reference, e.workflow_id, e.invoice_no, e.supplier_id, e.line_no, e.kind,
                        e.amount_paise, e.memo,
                    )
                    new += 1
            return new

        rng = random.Random(20261014)
        duplicates = 0
        for round_no in range(ROUNDS):
            workflow_id = f"naive-{round_no}-{uuid.uuid4()}"
            await _race(pool, naive_poster, _entries(workflow_id), rng)
            row = await pool.fetchrow(
                f"SELECT count(*) AS n, count(DISTINCT reference) AS keys FROM {table}"
                " WHERE workflow_id = $1", workflow_id,
            )
            assert row["keys"] == ENTRIES
            duplicates += row["n"] - row["keys"]
        assert duplicates > 0, "check-then-insert never duplicated a row in the race"
    finally:
        await pool.execute(f"DROP TABLE IF EXISTS {table}")


# ---------------------------------------------------------------------------------------- c.

async def test_same_key_with_another_amount_fails_loudly_and_rolls_back_the_batch(
    pool: asyncpg.Pool,
) -> None:
    workflow_id = f"conflict-{uuid.uuid4()}"
    first, second, third, fourth, fifth = _entries(workflow_id, 5)
    async with pool.acquire() as conn:
        assert await post_entries(conn, [first, second, third]) == 3
        # The same entries again: a harmless redo, nothing new.
        assert await post_entries(conn, [first, second, third]) == 0

        changed = replace(second, amount_paise=second.amount_paise - 500)
        with pytest.raises(KeyPayloadConflict, match=second.reference):
            await post_entries(conn, [fourth, changed, fifth])

    rows = {
        r["reference"]: r["amount_paise"]
        for r in await pool.fetch(
            "SELECT reference, amount_paise FROM ledger_entries WHERE workflow_id = $1", workflow_id
        )
    }
    # The stored row keeps its first amount, and the batch's other (new) entries were not written.
    assert rows == {e.reference: e.amount_paise for e in (first, second, third)}


# ---------------------------------------------------------------------------------------- d.

async def test_an_earlier_attempt_of_the_same_run_cannot_take_the_fence_back(
    pool: asyncpg.Pool,
) -> None:
    """A woken worker starting a superseded attempt must not take a newer token than the live
    attempt holds; a later activity of the run, or another run (reset, undo, redo), may."""
    from recon.store.fences import Holder

    scope = fence_scope(f"fence-{uuid.uuid4()}", "ledger")
    live = await take_fence(pool, scope, Holder("run-1", seq=7, attempt=3))
    for stale in (Holder("run-1", 7, 2), Holder("run-1", 5, 9)):
        with pytest.raises(StaleAttempt):
            await take_fence(pool, scope, stale)
    assert await pool.fetchval("SELECT token FROM fences WHERE scope = $1", scope) == live.token
    again = await take_fence(pool, scope, Holder("run-1", 7, 4))
    later_step = await take_fence(pool, scope, Holder("run-1", 12, 1))
    other_run = await take_fence(pool, scope, Holder("run-2", 1, 1))
    assert live.token < again.token < later_step.token < other_run.token


async def test_a_stale_fence_writes_nothing(pool: asyncpg.Pool) -> None:
    workflow_id = f"fence-{uuid.uuid4()}"
    scope = fence_scope(workflow_id, "ledger")
    older = await take_fence(pool, scope)
    newer = await take_fence(pool, scope)
    assert newer.token > older.token
    entries = _entries(workflow_id, 6)

    async with pool.acquire() as conn:
        with pytest.raises(StaleAttempt):
            await post_entries(conn, entries[:3], older)
        assert await pool.fetchval(
            "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1", workflow_id
        ) == 0

        assert await post_entries(conn, entries, newer) == 6
        # The stale attempt stays refused even for keys that now exist with the same payload.
        with pytest.raises(StaleAttempt):
            await post_entries(conn, entries[:3], older)

    tokens = await pool.fetch(
        "SELECT fence_token FROM ledger_entries WHERE workflow_id = $1", workflow_id
    )
    assert [r["fence_token"] for r in tokens] == [newer.token] * 6


async def _until_blocked_by(pool: asyncpg.Pool, waiter: int, holder: int, timeout: float = 10) -> None:
    """Wait until backend `waiter` is waiting on a lock held by backend `holder`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while holder not in await pool.fetchval("SELECT pg_blocking_pids($1)", waiter):
        if loop.time() > deadline:
            raise AssertionError(f"backend {waiter} never waited on backend {holder}")
        await asyncio.sleep(0.01)


async def test_a_write_already_under_way_finishes_before_a_new_fence_is_taken(
    pool: asyncpg.Pool,
) -> None:
    """The FOR SHARE in `Fence.check` holds the fence row until the write commits, so a newer
    attempt's `take_fence` waits for a write that was already under way instead of overtaking it.

    Made deterministic without touching `post_entries`: a third connection holds an uncommitted
    insert of one of the keys, so the old attempt's transaction stops *inside* `post_entries`,
    after its fence check and in the middle of its INSERT, for as long as we like."""
    workflow_id = f"fence-wait-{uuid.uuid4()}"
    scope = fence_scope(workflow_id, "ledger")
    older = await take_fence(pool, scope)
    entries = _entries(workflow_id, 5)
    blocker = entries[2]

    async with pool.acquire() as writer, pool.acquire() as taker, pool.acquire() as other:
        stall = other.transaction()
        await stall.start()
        await other.execute(
            "INSERT INTO ledger_entries (reference, workflow_id, invoice_no, supplier_id, line_no,"
            " kind, amount_paise) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            blocker.reference, workflow_id, blocker.invoice_no, blocker.supplier_id,
            blocker.line_no, blocker.kind, blocker.amount_paise,
        )
        try:
            write = asyncio.create_task(post_entries(writer, entries, older))
            # The old attempt has checked its fence and is now waiting inside its INSERT.
            await _until_blocked_by(pool, writer.get_server_pid(), other.get_server_pid())

            take = asyncio.create_task(take_fence(taker, scope))
            # The new attempt waits for the old attempt's transaction, not the other way round.
            await _until_blocked_by(pool, taker.get_server_pid(), writer.get_server_pid())
            assert not write.done() and not take.done()
        finally:
            await stall.rollback()

        assert await write == len(entries)
        newer = await take
    assert newer.token == older.token + 1

    rows = await pool.fetch(
        "SELECT fence_token FROM ledger_entries WHERE workflow_id = $1", workflow_id
    )
    assert [r["fence_token"] for r in rows] == [older.token] * len(entries)
    # From now on the old attempt is refused.
    async with pool.acquire() as conn:
        with pytest.raises(StaleAttempt):
            await post_entries(conn, entries, older)
