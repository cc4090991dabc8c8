"""Step 7 toward a ledger that enforces a key (tests/fakes/key_ledger.py, the IETF draft and
QuickBooks' requestid on loopback): a lost answer or a 409 is retried under the same key and
lands once; a 422 (the key with another body) hands over naming both bodies."""

from __future__ import annotations

import asyncio
import threading
from datetime import date

import asyncpg
import pytest
from temporalio.client import Client

from recon.ledger.keyed_http import KeyedHttpLedger, LedgerBusy, request_id
from recon.ledger.port import Entry, LedgerDisagrees
from recon.tools.seed import seed_night
from tests.fakes.key_ledger import KeyLedger
from tests.helpers import first_handover, inprocess_worker, settings_for, start

ENTRY = Entry("recon-2026-10-13-ldh:INV-1:2:price", 12_345, "S001", "INV-1", 2, "price",
              date(2026, 10, 13))


@pytest.fixture
def key_ledger():
    server = KeyLedger(token="ledger-token-123456").start()
    yield server
    server.stop()


async def test_the_draft_same_key_same_body_first_answer_other_body_422(key_ledger) -> None:
    ledger = KeyedHttpLedger(key_ledger.url, "ledger-token-123456")
    first = await ledger.post(ENTRY)
    assert await ledger.post(ENTRY) == first  # the first response again, nothing stored
    assert len(key_ledger.entries) == 1
    with pytest.raises(LedgerDisagrees) as refused:
        await ledger.post(Entry(**{**ENTRY.__dict__, "amount_paise": 99_999}))
    words = str(refused.value)
    assert "422" in words and '"amount_minor": 99999' in words and '"amount_minor": 12345' in words
    assert len(key_ledger.entries) == 1


async def test_a_concurrent_repeat_is_409_and_temporary(key_ledger) -> None:
    key_ledger.slow_seconds = 1.0
    ledger = KeyedHttpLedger(key_ledger.url, "ledger-token-123456")
    results = await asyncio.gather(ledger.post(ENTRY), ledger.post(ENTRY), return_exceptions=True)
    busy = [r for r in results if isinstance(r, Exception)]
    assert len(busy) == 1 and isinstance(busy[0], LedgerBusy) and isinstance(busy[0], ConnectionError)
    assert len(key_ledger.entries) == 1


def test_requestid_is_the_key_or_its_hash_within_quickbooks_limit() -> None:
    assert request_id("short:key") == "short:key"
    long = "recon-2026-10-13-warehouse-long:INV-2026-000123:17:price:g2"
    assert len(request_id(long)) == 50 and request_id(long) == request_id(long)


async def _night(pool, client, night, key_ledger, mismatches=10):
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=50, mismatches=mismatches)
    settings = settings_for(queue, ledger="http", ledger_url=key_ledger.url,
                            ledger_secret="ledger-token-123456")
    return settings, day, warehouse


async def test_a_lost_answer_and_409s_are_retried_and_each_entry_lands_once(
    pool: asyncpg.Pool, client: Client, night, key_ledger
) -> None:
    key_ledger.busy_first = 2
    key_ledger.drop_response_of = {3}
    settings, day, warehouse = await _night(pool, client, night, key_ledger)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await asyncio.wait_for(handle.result(), 180)
    live = {r["reference"]: r["amount_paise"] for r in await pool.fetch(
        "SELECT reference, amount_paise FROM live_ledger_entries WHERE workflow_id = $1", handle.id)}
    assert {k: v["amount_minor"] for k, v in key_ledger.entries.items()} == live
    assert [s for _, s in key_ledger.seen].count(409) == 2
    assert [s for _, s in key_ledger.seen].count(0) == 1  # the lost answer, then a repeat
    states = await pool.fetch("SELECT state, outside_id FROM ledger_postings WHERE workflow_id = $1",
                              handle.id)
    assert len(states) == 10 and {s["state"] for s in states} == {"verified"}


async def test_a_key_held_with_another_body_hands_over_naming_both(
    pool: asyncpg.Pool, client: Client, night, key_ledger
) -> None:
    settings, day, warehouse = await _night(pool, client, night, key_ledger, mismatches=4)
    planted = threading.Event()
    original = key_ledger._handle

    def plant_then_handle(handler):
        # Before the first entry lands, the same key is already there with another amount.
        key = handler.headers.get("Idempotency-Key")
        if key and not planted.is_set():
            planted.set()
            key_ledger.entries[key] = {"key": key, "amount_minor": 1}
            key_ledger.answers[key] = (201, b'{"id": "JE-0"}')
        return original(handler)

    key_ledger._handle = plant_then_handle
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        words = await _failed_words(pool, handle.id)
        note = await first_handover(pool, handle.id)
    assert "422" in words and '"amount_minor": 1' in words and "recon sent" in words
    assert note["error_message"] == words and note["step"] == "post_adjustments"
    assert note["error_type"] == "LedgerDisagrees" and note["attempts"] == 1


async def _failed_words(pool: asyncpg.Pool, wf: str) -> str:
    for _ in range(600):
        words = await pool.fetchval("SELECT words FROM ledger_postings WHERE workflow_id = $1"
                                    " AND state = 'failed'", wf)
        if words:
            return words
        await asyncio.sleep(0.2)
    raise AssertionError("no entry failed")
