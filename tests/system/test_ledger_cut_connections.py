"""A cut connection is temporary for both outside ledgers (recon/ledger/wire.py): a body cut
mid-response, a connection reset after the request landed, and a proxy's 502s for a while, each
put between step 7 and a real Tryton or the key server by a loopback proxy
(tests/fakes/http_faults.py). Each is ridden out under the same key: every key once, posted, no
handover. Before the rule, a cut body was `unknown` and the night handed over."""

from __future__ import annotations

import asyncio
import time
from datetime import date

import asyncpg
import pytest
from temporalio.client import Client

from recon.ledger.port import Entry
from recon.ledger.tryton import TrytonLedger, TrytonUnavailable
from recon.ledger.tryton_setup import DATABASE
from recon.tools.seed import seed_night
from tests.fakes.http_faults import FaultyProxy
from tests.fakes.key_ledger import KeyLedger
from tests.helpers import inprocess_worker, settings_for, start
from tests.tryton import ADMIN_PASSWORD, TrytonServer

pytestmark = pytest.mark.slow

FAULTS = ("cut", "reset", "502")
BURST_SECONDS = 15.0  # how long the proxy answers 502 to everything


async def _live_entries(pool: asyncpg.Pool, wf: str) -> dict[str, int]:
    return {r["reference"]: r["amount_paise"] for r in await pool.fetch(
        "SELECT reference, amount_paise FROM live_ledger_entries WHERE workflow_id = $1", wf)}


def _plan(proxy: FaultyProxy, fault: str, calls: tuple[tuple[bytes, int], ...]) -> None:
    """Planned before the night starts: the proxy applies it to step 7's first calls."""
    if fault == "502":
        proxy.fail("502", seconds=BURST_SECONDS)
    else:  # the request lands, its answer does not
        for call, times in calls:
            proxy.fail(fault, times=times, when=call)


async def _ride_out(pool, client, settings, day, warehouse, proxy, fault) -> str:
    """Run the night through the proxy's faults; returns the run's id. No handover, every
    entry verified in the ledger; prints how long the night took from the first fault."""
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await asyncio.wait_for(handle.result(), 240)
        ended = time.monotonic()
    assert proxy.first_fault_at is not None, "the fault must hit step 7"
    assert not await pool.fetchval("SELECT count(*) FROM handovers WHERE workflow_id = $1",
                                   handle.id), "a cut connection must not hand the night over"
    states = await pool.fetch("SELECT state FROM ledger_postings WHERE workflow_id = $1", handle.id)
    assert states and {s["state"] for s in states} == {"verified"}
    print(f"\n{settings.ledger}: {fault} ridden out, night done {ended - proxy.first_fault_at:.1f} s "
          f"after the first fault ({proxy.count(fault)} faulty answers)")
    return handle.id


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_cut_connection_to_tryton_is_ridden_out_each_key_once(
    pool: asyncpg.Pool, client: Client, night, tryton: TrytonServer, fault: str
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=12)
    proxy = FaultyProxy(tryton.port).start()
    env = tryton.env()
    settings = settings_for(queue, ledger="tryton", ledger_url=f"http://127.0.0.1:{proxy.port}/{DATABASE}",
                            ledger_secret_file=env["RECON_LEDGER_SECRET_FILE"],
                            ledger_create_parties=env["RECON_LEDGER_CREATE_PARTIES"].lower())
    _plan(proxy, fault, ((b"account.move.create", 2), (b"account.move.post", 1),
                         (b"search_read", 1)))
    try:
        wf = await _ride_out(pool, client, settings, day, warehouse, proxy, fault)
    finally:
        proxy.stop()
    held: dict[str, list[int]] = {}
    for move in tryton.moves():
        assert move["state"] == "posted", move
        held.setdefault(move["description"], []).append(move["paise"])
    assert held == {key: [paise] for key, paise in (await _live_entries(pool, wf)).items()}
    if fault == "502":
        assert proxy.count("502") >= 2
    else:  # the create, the post and a look-up each lost their answer at least once
        assert proxy.count(fault) >= 3


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_cut_connection_to_the_key_server_is_ridden_out_each_key_once(
    pool: asyncpg.Pool, client: Client, night, fault: str
) -> None:
    key_ledger = KeyLedger(token="ledger-token-123456").start()
    proxy = FaultyProxy(key_ledger.server.server_address[1]).start()
    try:
        day, warehouse, queue = night
        await seed_night(pool, day, warehouse, invoices=60, mismatches=12)
        settings = settings_for(queue, ledger="http", ledger_url=f"http://127.0.0.1:{proxy.port}",
                                ledger_secret="ledger-token-123456")
        _plan(proxy, fault, ((b'"key"', 3),))
        wf = await _ride_out(pool, client, settings, day, warehouse, proxy, fault)
    finally:
        proxy.stop()
        key_ledger.stop()
    live = await _live_entries(pool, wf)
    assert {k: v["amount_minor"] for k, v in key_ledger.entries.items()} == live
    assert proxy.count(fault) >= (2 if fault == "502" else 3)


async def test_a_cut_while_tryton_is_first_asked_for_its_codes_leaves_nothing_half_known(
    tryton: TrytonServer,
) -> None:
    """The adapter learns the ids of its accounts and journal once per worker: a cut between the
    payable's and the journal's must not leave it believing it knows them all (the next post
    would fail on the missing journal, `unknown`, and hand over)."""
    proxy = FaultyProxy(tryton.port).start()
    proxy.fail("cut", times=1, when=b"model.account.journal.search")
    ledger = TrytonLedger(f"http://127.0.0.1:{proxy.port}/{DATABASE}", "admin", ADMIN_PASSWORD,
                          payable="AP", variance="PPV", journal="EXP", create_parties=True)
    entry = Entry("recon-2026-10-13-ldh:INV-1:1:price", 12_345, "S001", "INV-1", 1, "price",
                  date(2026, 10, 13))
    try:
        with pytest.raises(TrytonUnavailable, match="IncompleteRead"):
            await ledger.post(entry)
        moved = await ledger.post(entry)
    finally:
        proxy.stop()
    assert [(m["id"], m["state"]) for m in tryton.moves()] == [(int(moved), "posted")]
