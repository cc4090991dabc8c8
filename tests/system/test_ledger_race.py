"""Two attempts on one run toward Tryton, without Temporal in between: the real fence in Postgres
and the real Tryton (tests/tryton.py). Two pushers holding the same live token post each move once
(each entry is settled under a row lock, looked up in Tryton first); a pusher whose token was
taken over posts nothing."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from recon.domain.errors import StaleAttempt
from recon.domain.keys import undo_key
from recon.ledger import pusher
from recon.ledger.port import LedgerRefused
from recon.ledger.pusher import push
from recon.ledger.tryton import TrytonLedger
from recon.store import ledger_postings as postings
from recon.store.fences import take_fence
from recon.store.ledger import LedgerEntry, TaxParts, post_entries
from tests.tryton import ADMIN_PASSWORD, TrytonServer

pytestmark = pytest.mark.slow



def _fresh_run() -> str:
    """A workflow id no other test of this process can hold. Not a module-level counter: pytest
    imports this file as `test_ledger_race` (tests/system has no __init__.py), and
    test_ledger_tryton_pg.py imports it again as `tests.system.test_ledger_race`, a second module
    with a second counter. Both counters handed out `race{pid}x1`: the PostgreSQL racing test's
    first 20 keys were this file's racing test's keys, already recorded posted (into its SQLite
    Tryton), so only 10 of its 30 were owed and posted (issue 48: "10 of 30 moves")."""
    return f"recon-2026-10-13-race{uuid.uuid4().hex[:12]}"


def _ledger(tryton: TrytonServer) -> TrytonLedger:
    return TrytonLedger(tryton.url, "admin", ADMIN_PASSWORD, payable="AP", variance="PPV",
                        journal="EXP", create_parties=True)


async def _owed(pool: asyncpg.Pool, n: int):
    wf = _fresh_run()
    fence = await take_fence(pool, f"{wf}:ledger")
    entries = [LedgerEntry(reference=f"{wf}:INV-{i}:1:price", workflow_id=wf, invoice_no=f"INV-{i}",
                           supplier_id="S001", line_no=1, kind="price", amount_paise=1_000 + i)
               for i in range(n)]
    async with pool.acquire() as conn:
        # Every entry new and owed: a key some earlier test already settled would silently
        # shrink what the pushers under test have to do.
        assert await post_entries(conn, entries, fence) == n
        await postings.enqueue_live(conn, wf, None, "tryton")
        assert len(await postings.pending(conn, wf, None, False)) == n
    return wf, fence, {e.reference: e.amount_paise for e in entries}


async def test_two_pushers_racing_on_one_run_post_each_move_once(
    pool: asyncpg.Pool, tryton: TrytonServer
) -> None:
    wf, fence, wanted = await _owed(pool, 20)

    async def pusher() -> int:
        async with pool.acquire() as conn:
            return await push(conn, _ledger(tryton), fence, wf, None, reversals=False,
                              step="race")

    sent = await asyncio.gather(pusher(), pusher())
    assert sum(sent) == 20
    held = {m["description"]: m["paise"] for m in tryton.moves()}
    assert held == wanted and len(tryton.moves()) == 20


async def test_a_pusher_whose_fence_was_taken_over_posts_nothing(
    pool: asyncpg.Pool, tryton: TrytonServer
) -> None:
    wf, stale, _ = await _owed(pool, 3)
    await take_fence(pool, f"{wf}:ledger")  # another attempt took the run over
    async with pool.acquire() as conn:
        with pytest.raises(StaleAttempt):
            await push(conn, _ledger(tryton), stale, wf, None, reversals=False, step="race")
    assert tryton.moves() == []
    assert await pool.fetchval("SELECT count(*) FROM ledger_postings WHERE workflow_id = $1"
                               " AND state = 'waiting'", wf) == 3


async def test_a_batch_with_one_refused_entry_names_it_and_posts_the_rest(
    pool: asyncpg.Pool, tryton: TrytonServer
) -> None:
    """Entry 3 of 6 carries a cess part whose Tryton account the settings do not name: the
    batch's one create is refused whole (nothing made), then each entry is settled alone: entry 3
    is recorded failed in words naming it, the five others are posted, once each."""
    wf = _fresh_run()
    fence = await take_fence(pool, f"{wf}:ledger")
    entries = [LedgerEntry(reference=f"{wf}:INV-{i}:1:price", workflow_id=wf, invoice_no=f"INV-{i}",
                           supplier_id="S001", line_no=1, kind="price", amount_paise=1_000 + i,
                           parts=TaxParts(taxable_paise=900 + i, cess_paise=100) if i == 3 else None)
               for i in range(6)]
    async with pool.acquire() as conn:
        await post_entries(conn, entries, fence)
        await postings.enqueue_live(conn, wf, None, "tryton")
    ledger = TrytonLedger(tryton.url, "admin", ADMIN_PASSWORD, payable="AP", variance="PPV",
                          journal="EXP", taxes={}, create_parties=True)
    assert ledger.batch >= 6
    refused = entries[3].reference
    async with pool.acquire() as conn:
        with pytest.raises(LedgerRefused) as caught:
            await push(conn, ledger, fence, wf, None, reversals=False, step="race")
    assert str(caught.value).startswith(f"{refused}: Tryton has no account for the CESS part")
    held = {m["description"]: (m["state"], m["paise"]) for m in tryton.moves()}
    assert held == {e.reference: ("posted", e.amount_paise) for e in entries if e.reference != refused}
    states = {r["reference"]: (r["state"], r["words"]) for r in await pool.fetch(
        "SELECT reference, state, words FROM ledger_postings WHERE workflow_id = $1", wf)}
    assert states.pop(refused) == ("failed", str(caught.value))
    assert {state for state, _ in states.values()} == {"posted"}


class _Paused(TrytonLedger):
    """The real adapter, paused at one spot of its write (`before_create`: after the look-up and
    the fence check, before the move is made; `before_settle`: the draft made, not yet compared)
    until the test releases it: a frozen VM, made deterministic."""

    def __init__(self, tryton: TrytonServer, where: str) -> None:
        super().__init__(tryton.url, "admin", ADMIN_PASSWORD, payable="AP", variance="PPV",
                         journal="EXP", create_parties=True)
        self.where, self.reached, self.release = where, asyncio.Event(), asyncio.Event()

    async def _pause(self, where: str) -> None:
        if where == self.where:
            self.reached.set()
            await self.release.wait()

    async def before_create(self, entry) -> None:
        await self._pause("before_create")

    async def before_settle(self, entry) -> None:
        await self._pause("before_settle")


async def _frozen_then_taken_over(pool: asyncpg.Pool, tryton: TrytonServer, wf: str,
                                  fence, where: str, *, reversals: bool) -> None:
    """Attempt A stops inside its write; Postgres ends its transaction (the idle limit, 2 s
    here), attempt B takes the fence over and settles the entry; then A wakes and carries on
    with the Tryton calls it was making (its own Postgres transaction is gone: it records
    nothing, which the test accepts as an error)."""
    frozen = _Paused(tryton, where)

    async def stale() -> int:
        async with pool.acquire() as conn:
            return await push(conn, frozen, fence, wf, None, reversals=reversals, step="race")

    task = asyncio.create_task(stale())
    await asyncio.wait_for(frozen.reached.wait(), 60)
    # A's transaction keeps the short idle limit it started with; B's get the real one: on a
    # loaded machine B's own Tryton calls can sit longer than 2 s, and Postgres would end B too.
    pusher.OUTSIDE_CALL_SECONDS = 100
    live = await asyncio.wait_for(take_fence(pool, f"{wf}:ledger"), 30)  # waits out A's lock
    async with pool.acquire() as conn:
        assert await push(conn, _ledger(tryton), live, wf, None, reversals=reversals,
                          step="race") == (0 if where == "before_settle" else 1)
    frozen.release.set()
    with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError)):
        await task


def _every_move_of(tryton: TrytonServer, key: str) -> list[dict]:
    """Asked of Tryton: every move with the key, whatever its lines or state."""
    return tryton._rpc("model.account.move.search_read", [("description", "=", key)], 0, None,
                       None, ["state"])


@pytest.mark.parametrize("keys", [True, False], ids=["recon_keys", "without"])
@pytest.mark.parametrize("where", ["before_create", "before_settle"])
async def test_a_worker_frozen_inside_its_post_and_woken_after_a_takeover_posts_no_second_move(
    pool: asyncpg.Pool, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
    where: str, keys: bool
) -> None:
    """The window check-then-post alone left open: A looked the key up (nothing there), checked
    its fence, froze longer than the idle limit; B took over and posted; A woke and made its
    move. Tryton now holds A's move as a draft with a higher id than B's, A deletes it and
    takes B's: one posted move. (Frozen after its create instead: B finds A's draft, the lowest,
    and posts it; A finds it posted.) With recon_keys, A's create is refused by Tryton (the key
    is B's) and A takes B's move."""
    tryton = request.getfixturevalue("tryton" if keys else "tryton_without_keys")
    monkeypatch.setattr(pusher, "OUTSIDE_CALL_SECONDS", 2)
    wf, fence, wanted = await _owed(pool, 1)
    (key,) = wanted
    await _frozen_then_taken_over(pool, tryton, wf, fence, where, reversals=False)
    moves = tryton.moves()
    assert [(m["description"], m["state"], m["paise"]) for m in moves] == \
        [(key, "posted", wanted[key])]
    assert [m["state"] for m in _every_move_of(tryton, key)] == ["posted"]
    recorded = await pool.fetchrow("SELECT state, outside_id FROM ledger_postings"
                                   " WHERE reference = $1", key)
    assert (recorded["state"], recorded["outside_id"]) == ("posted", str(moves[0]["id"]))


@pytest.mark.parametrize("reconciles", [True, False])
async def test_an_undo_frozen_inside_its_cancel_and_woken_after_a_takeover_cancels_once(
    pool: asyncpg.Pool, tryton: TrytonServer, monkeypatch: pytest.MonkeyPatch, reconciles: bool
) -> None:
    """The same window for the cancelling move `undo:{key}`: with a reconciling payable Tryton's
    cancel wizard refuses the second cancel (the original's line is reconciled already) and A
    takes the first; without one, A's reversal is a draft above B's, deleted."""
    monkeypatch.setattr(pusher, "OUTSIDE_CALL_SECONDS", 2)
    if not reconciles:
        (payable,) = tryton._rpc("model.account.account.search", [("code", "=", "AP")], 0, 1, None)
        tryton._rpc("model.account.account.write", [payable], {"reconcile": False})
    wf, fence, wanted = await _owed(pool, 1)
    (key,) = wanted
    async with pool.acquire() as conn:
        assert await push(conn, _ledger(tryton), fence, wf, None, reversals=False,
                          step="race") == 1
        fence = await take_fence(pool, f"{wf}:ledger")
        await post_entries(conn, [LedgerEntry(
            reference=undo_key(key), workflow_id=wf, invoice_no="INV-0", supplier_id="S001",
            line_no=1, kind="reversal", amount_paise=-wanted[key], reverses=key)], fence)
        await postings.enqueue_reversals(conn, wf, [undo_key(key)], "tryton")
    await _frozen_then_taken_over(pool, tryton, wf, fence, "before_create", reversals=True)
    cancels = [m for m in tryton.moves() if m["description"] == undo_key(key)]
    assert [(m["state"], m["paise"]) for m in cancels] == [("posted", -wanted[key])]
    assert [m["state"] for m in _every_move_of(tryton, undo_key(key))] == ["posted"]
    assert len(tryton.moves()) == 2


def test_ledger_init_indexes_the_key_and_a_module_update_keeps_the_index(
    tryton_template, tmp_path
) -> None:
    """recon's look-ups by key read `account_move.description`: the database `recon ledger init`
    makes indexes it, SQLite's plan for a look-up uses the index, and `trytond-admin -u account`
    (which drops indexes named like its own that no module declares) leaves it in place."""
    import shutil
    import sqlite3
    import subprocess
    import sys
    from pathlib import Path

    from recon.ledger.tryton_setup import DATABASE, DESCRIPTION_INDEX, write_config

    directory = tmp_path / "updated"
    shutil.copytree(tryton_template, directory)
    conf = write_config(directory)
    subprocess.run([str(Path(sys.executable).with_name("trytond-admin")), "-c", str(conf), "-d",
                    DATABASE, "-u", "account"], check=True, capture_output=True)
    db = sqlite3.connect(directory / f"{DATABASE}.sqlite")
    try:
        names = {r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'account_move'")}
        plan = " ".join(str(r) for r in db.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM account_move WHERE description IN (?, ?)",
            ("recon-a", "recon-b")))
    finally:
        db.close()
    assert DESCRIPTION_INDEX in names
    assert DESCRIPTION_INDEX in plan, plan
