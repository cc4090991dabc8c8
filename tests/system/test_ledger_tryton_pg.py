"""Tryton over PostgreSQL (tests/tryton_pg.py), as a company runs it: ids come from a sequence,
so two transactions can commit out of id order, which the lowest-id rule assumes never happens.
recon's module recon_keys makes Tryton refuse a second move of a key itself; these tests show
the risk without it and that, with it, one key is one move whoever races."""

from __future__ import annotations

import asyncio
from datetime import date

import asyncpg
import pytest
from temporalio.client import Client

import tests.system.test_ledger_tryton as on_sqlite
from recon.domain.errors import VerificationFailed
from recon.ledger import pusher as pusher_module
from recon.ledger.port import Entry
from recon.ledger.pusher import push, verify_outside
from recon.ledger.tryton import TrytonLedger
from recon.store import ledger_postings as postings
from tests.system.test_ledger_race import _every_move_of, _frozen_then_taken_over, _owed
from tests.tryton import ADMIN_PASSWORD, TrytonServer
from tests.tryton_pg import TrytonCluster

pytestmark = pytest.mark.slow

DAY = date(2026, 10, 13)
GATE = 4242  # the advisory lock the first move made after `_hold_first_move` waits on


def _ledger(tryton: TrytonServer) -> TrytonLedger:
    return TrytonLedger(tryton.url, "admin", ADMIN_PASSWORD, payable="AP", variance="PPV",
                        journal="EXP", create_parties=True)


async def test_seed_night_killed_at_entry_24_on_postgresql(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack, tryton_pg: TrytonServer
) -> None:
    await on_sqlite.killed_at_entry_24(pool, client, night, spawn_worker, stack, tryton_pg)


@pytest.mark.parametrize("keys", [True, False], ids=["recon_keys", "without"])
async def test_two_pushers_racing_on_postgresql_post_each_move_once(
    pool: asyncpg.Pool, request: pytest.FixtureRequest, keys: bool
) -> None:
    tryton = request.getfixturevalue("tryton_pg_shared" if keys else "tryton_pg_without_keys")
    wf, fence, wanted = await _owed(pool, 30)

    async def pusher() -> int:
        async with pool.acquire() as conn:
            ledger = _ledger(tryton)
            ledger.batch = 7  # batches that overlap the other pusher's at different keys
            return await push(conn, ledger, fence, wf, None, reversals=False, step="race")

    sent = await asyncio.gather(pusher(), pusher())
    # The batch's rows are locked from before its look-up until it is recorded, so of two
    # pushers one settles a batch and the other finds it settled: every key sent once.
    assert sum(sent) == 30
    moves = [m for m in tryton.moves() if m["description"].startswith(wf)]
    assert {m["description"]: m["paise"] for m in moves} == wanted and len(moves) == 30
    assert {m["state"] for m in moves} == {"posted"}
    async with pool.acquire() as conn:  # step 7's closing check, asked of Tryton
        assert await verify_outside(conn, _ledger(tryton), wf, None) == 30
    recorded = {r["reference"]: (r["state"], r["outside_id"]) for r in await pool.fetch(
        "SELECT reference, state, outside_id FROM ledger_postings WHERE workflow_id = $1", wf)}
    assert recorded == {m["description"]: ("verified", str(m["id"])) for m in moves}


async def test_a_key_recorded_posted_but_not_in_this_tryton_is_not_done(
    pool: asyncpg.Pool, tryton_pg_shared: TrytonServer
) -> None:
    """What the racing test once met (two tests handed one workflow id, so 20 of its 30 keys were
    already recorded posted, into another Tryton): the pusher sends only what is owed, and step
    7's closing check, asking Tryton, refuses to call a key done that Tryton does not hold."""
    wf, fence, wanted = await _owed(pool, 3)
    elsewhere = sorted(wanted)[0]
    async with pool.acquire() as conn:
        await postings.mark(conn, elsewhere, postings.POSTED, "999999")
        assert await push(conn, _ledger(tryton_pg_shared), fence, wf, None, reversals=False,
                          step="race") == 2
        with pytest.raises(VerificationFailed, match=f"1 missing, 0 posted twice, of 3 expected "
                                                     f"\\(first: {elsewhere}\\)"):
            await verify_outside(conn, _ledger(tryton_pg_shared), wf, None)
    assert sorted(m["description"] for m in tryton_pg_shared.moves()
                  if m["description"].startswith(wf)) == sorted(wanted)[1:]


@pytest.mark.parametrize("where", ["before_create", "before_settle"])
async def test_a_worker_frozen_inside_its_post_and_woken_after_a_takeover_on_postgresql(
    pool: asyncpg.Pool, tryton_pg_shared: TrytonServer, monkeypatch: pytest.MonkeyPatch,
    where: str
) -> None:
    """A stops inside its write (after its look-up, or after its create), its Postgres
    transaction ends (the idle limit), B takes the fence over and settles the key, A wakes: with
    recon_keys its create is refused by Tryton (the key is B's), or B found and posted A's draft.
    One move, posted, recorded with its id."""
    monkeypatch.setattr(pusher_module, "OUTSIDE_CALL_SECONDS", 2)
    wf, fence, wanted = await _owed(pool, 1)
    (key,) = wanted
    await _frozen_then_taken_over(pool, tryton_pg_shared, wf, fence, where, reversals=False)
    moves = [m for m in tryton_pg_shared.moves() if m["description"] == key]
    assert [(m["state"], m["paise"]) for m in moves] == [("posted", wanted[key])]
    assert [m["state"] for m in _every_move_of(tryton_pg_shared, key)] == ["posted"]
    recorded = await pool.fetchrow("SELECT state, outside_id FROM ledger_postings"
                                   " WHERE reference = $1", key)
    assert (recorded["state"], recorded["outside_id"]) == ("posted", str(moves[0]["id"]))


async def test_supplier_undo_and_redo_on_postgresql_each_key_once(
    pool: asyncpg.Pool, client: Client, night, stack, tryton_pg: TrytonServer
) -> None:
    await on_sqlite.test_supplier_undo_cancels_each_move_once_and_redo_posts_them_again_once(
        pool, client, night, stack, tryton_pg)


async def _hold_first_move(tryton_cluster: TrytonCluster, tryton: TrytonServer) -> asyncpg.Connection:
    """A slow commit, made deterministic: the next `account_move` row Tryton inserts waits, inside
    its transaction (its id already taken from the sequence), for an advisory lock this
    connection holds. What a descheduled Tryton worker, a slow disk or a lock elsewhere does."""
    conn = await asyncpg.connect(tryton_cluster.dsn.replace("/postgres?", f"/{tryton.database}?"))
    await conn.execute(f"""
        CREATE SEQUENCE recon_test_gate;
        CREATE FUNCTION recon_test_hold() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
        BEGIN
            IF nextval('recon_test_gate') = 1 THEN PERFORM pg_advisory_xact_lock({GATE}); END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER recon_test_hold AFTER INSERT ON account_move
            FOR EACH ROW EXECUTE FUNCTION recon_test_hold();
        SELECT pg_advisory_lock({GATE});
    """)
    return conn


async def _until(conn: asyncpg.Connection, query: str, what: str, done=lambda: False) -> None:
    for _ in range(600):
        if done() or await conn.fetchval(query):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("keys", [True, False], ids=["recon_keys", "without"])
async def test_two_adapters_posting_one_key_at_the_same_moment(
    request: pytest.FixtureRequest, tryton_cluster: TrytonCluster, keys: bool
) -> None:
    """A's create takes the lower id and is held before its commit; B creates the same key
    meanwhile. Without recon_keys B commits first, its look-up sees only its own move and posts
    it; A then commits, sees its own as the lowest and posts it too: two posted moves (what the
    closing check would find after the fact, in the company's books). With recon_keys, B's
    create waits on A's uncommitted key and is refused once A commits: one move, both adapters
    answer its id."""
    tryton = request.getfixturevalue("tryton_pg" if keys else "tryton_pg_without_keys")
    a, b = _ledger(tryton), _ledger(tryton)
    await a.post(Entry("warm-up", 100, "S001", "INV-0", 1, "price", DAY))  # S001's party
    for ledger in (a, b):
        await ledger.prepare()
        await ledger._party(Entry("warm-up", 100, "S001", "INV-0", 1, "price", DAY))
        await ledger._period(DAY)
        assert ledger.keyed is keys
    entry = Entry("recon-2026-10-13-ldh:INV-1:1:price", 5_000, "S001", "INV-1", 1, "price", DAY)
    gate = await _hold_first_move(request.getfixturevalue("tryton_cluster"), tryton)
    try:
        first = asyncio.create_task(a.post(entry))
        await _until(gate, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                     " AND NOT granted", "A's create to be held")
        second = asyncio.create_task(b.post(entry))
        # B runs to its end (without the key) or waits on A's uncommitted key (with it)
        await _until(gate, "SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid'"
                     " AND NOT granted", "B to post or to wait", done=second.done)
        await gate.execute(f"SELECT pg_advisory_unlock({GATE})")
        ids = await asyncio.wait_for(asyncio.gather(first, second), 120)
    finally:
        await gate.close()
    held = [m for m in tryton.moves() if m["description"] == entry.key]
    if keys:
        assert [(m["state"], m["paise"]) for m in held] == [("posted", 5_000)]
        assert ids == [str(held[0]["id"])] * 2
    else:
        assert [(m["state"], m["paise"]) for m in held] == [("posted", 5_000)] * 2, \
            "without recon_keys, ids out of commit order post a key twice"
        assert sorted(ids) == sorted(str(m["id"]) for m in held)
