"""Step 7 on a real Tryton (tests/tryton.py): each adjustment one `account.move` there, exactly
once, through crashes, restarts, undo and redo; what Tryton refuses hands over in its words."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace

import asyncpg
import pytest
from temporalio.client import Client

from recon.tools.seed import seed_night
from tests.helpers import first_handover, inprocess_worker, recon_cli, settings_for, start
from tests.tryton import TrytonServer

pytestmark = pytest.mark.slow


def _tryton_settings(queue: str, tryton: TrytonServer, **changes):
    env = tryton.env()
    return settings_for(queue, ledger="tryton", ledger_url=env["RECON_LEDGER_URL"],
                        ledger_secret_file=env["RECON_LEDGER_SECRET_FILE"],
                        **{"ledger_create_parties": "true", **changes})


async def _live_entries(pool: asyncpg.Pool, wf: str) -> dict[str, int]:
    return {r["reference"]: r["amount_paise"] for r in await pool.fetch(
        "SELECT reference, amount_paise FROM live_ledger_entries WHERE workflow_id = $1", wf)}


def _by_key(tryton: TrytonServer) -> dict[str, list[int]]:
    held: dict[str, list[int]] = {}
    for move in tryton.moves():
        held.setdefault(move["description"], []).append(move["paise"])
    return held


async def test_seed_night_killed_at_entry_24_leaves_40_moves_once(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack, tryton: TrytonServer
) -> None:
    await killed_at_entry_24(pool, client, night, spawn_worker, stack, tryton)


async def killed_at_entry_24(pool: asyncpg.Pool, client: Client, night, spawn_worker, stack,
                             tryton: TrytonServer) -> None:
    """The seed's story on Tryton: the worker dies after Tryton took move 24 and before recon
    wrote that down; the next worker looks the key up, finds it, and posts only the rest. In
    batches of 8 (RECON_LEDGER_BATCH), entry 24 ends the third: moves 17-24 landed together,
    none of them recorded."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=312, mismatches=40)
    doomed = spawn_worker(queue, RECON_FAILPOINTS="post_adjustments_landed:24:first",
                          RECON_LEDGER_BATCH="8", **tryton.env())
    handle = await start(client, settings_for(queue), day, warehouse)
    assert await doomed.wait_exit(90) == 137
    assert len(tryton.moves()) == 24, "the crash must land after Tryton took move 24"
    spawn_worker(queue, **tryton.env())
    await asyncio.wait_for(handle.result(), 120)

    entries = await _live_entries(pool, handle.id)
    held = _by_key(tryton)
    assert len(entries) == 40 and len(tryton.moves()) == 40
    assert held == {key: [paise] for key, paise in entries.items()}
    assert all(m["state"] == "posted" for m in tryton.moves())
    states = await pool.fetch("SELECT state, outside_id FROM ledger_postings WHERE workflow_id = $1",
                              handle.id)
    assert len(states) == 40 and {s["state"] for s in states} == {"verified"}
    assert sorted(int(s["outside_id"]) for s in states) == sorted(m["id"] for m in tryton.moves())

    # Reading back: each entry's state in Tryton, with its move's id there.
    listed = await asyncio.to_thread(recon_cli, stack.env(), "inspect", handle.id, "--references")
    assert listed.returncode == 0, listed.stderr
    ids = {m["description"]: m["id"] for m in tryton.moves()}
    lines = listed.stdout.splitlines()
    assert len(lines) == 40
    assert all(line.endswith(f"live  tryton: verified as {ids[line.split()[0]]}") for line in lines)
    status = await asyncio.to_thread(recon_cli, stack.env(), "status", handle.id)
    assert "Outside ledger (tryton): 40 verified" in status.stdout, status.stdout


async def test_a_frozen_worker_woken_after_the_fence_moved_posts_nothing(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, tryton: TrytonServer
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=10)
    frozen = spawn_worker(queue, RECON_FAILPOINTS="post_adjustments_outside:4:stop",
                          RECON_LEDGER_BATCH="3", **tryton.env())  # frozen before its 2nd batch
    handle = await start(client, replace(settings_for(queue)), day, warehouse)
    await _wait(lambda: len(tryton.moves()) == 3, 90, "three moves, then the freeze")
    await _wait(lambda: "SIGSTOP" in frozen.output() or "freez" in frozen.output().lower(), 30,
                "the worker to freeze")
    spawn_worker(queue, **tryton.env())  # the heartbeat timeout hands step 7 to this one
    await asyncio.wait_for(handle.result(), 180)
    assert len(tryton.moves()) == 10
    frozen.thaw()  # the stale attempt wakes with a stale token: it must post nothing
    await asyncio.sleep(5)
    assert len(tryton.moves()) == 10
    assert all(len(v) == 1 for v in _by_key(tryton).values())


async def _wait(predicate, timeout: float, what: str) -> None:
    for _ in range(int(timeout * 5)):
        if predicate():
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_tryton_restart_during_step_7_is_ridden_out(
    pool: asyncpg.Pool, client: Client, night, tryton: TrytonServer
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=12)
    settings = _tryton_settings(queue, tryton)
    tryton.stop()  # down as step 7 begins: the outage is retried, not handed over
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await _wait_for_row(pool, handle.id)
        await asyncio.sleep(3)
        tryton.start()
        await asyncio.wait_for(handle.result(), 180)
    entries = await _live_entries(pool, handle.id)
    assert _by_key(tryton) == {key: [paise] for key, paise in entries.items()}


async def test_a_60_second_tryton_outage_in_the_middle_of_step_7_is_ridden_out(
    pool: asyncpg.Pool, client: Client, night, tryton: TrytonServer
) -> None:
    """Tryton goes away after some moves landed and stays away a minute: step 7 retries with
    growing waits (the outage window is 30 min) and, once Tryton is back, posts the rest once.
    Sixty entries in batches of five: step 7 is a dozen Tryton calls long, so the outage begins
    inside it however fast the machine is (one batch of all twelve left only the moment between
    Tryton's commit and recon's to catch it in)."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=120, mismatches=60)
    settings = _tryton_settings(queue, tryton, ledger_batch=5)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await _wait(lambda: len(tryton.moves()) >= 3, 120, "the first moves")
        tryton.stop()
        assert await pool.fetchval(
            "SELECT count(*) FROM ledger_postings WHERE workflow_id = $1 AND state = 'waiting'",
            handle.id), "the outage must begin inside step 7"
        await asyncio.sleep(60)
        assert not (await handle.describe()).status.name.startswith(("FAILED", "COMPLETED"))
        tryton.start()
        await asyncio.wait_for(handle.result(), 180)
    entries = await _live_entries(pool, handle.id)
    assert _by_key(tryton) == {key: [paise] for key, paise in entries.items()}
    assert not await pool.fetchval("SELECT count(*) FROM handovers WHERE workflow_id = $1",
                                   handle.id)


async def _wait_for_row(pool: asyncpg.Pool, wf: str) -> None:
    for _ in range(600):
        if await pool.fetchval("SELECT count(*) FROM ledger_postings WHERE workflow_id = $1", wf):
            return
        await asyncio.sleep(0.2)
    raise AssertionError("step 7 never queued an entry for Tryton")


async def test_supplier_undo_cancels_each_move_once_and_redo_posts_them_again_once(
    pool: asyncpg.Pool, client: Client, night, stack, tryton: TrytonServer
) -> None:
    day, warehouse, queue = night
    seeded = await seed_night(pool, day, warehouse, invoices=120, mismatches=24)
    settings = _tryton_settings(queue, tryton)
    env = {**stack.env(RECON_TASK_QUEUE=queue), **tryton.env()}
    supplier, count = Counter(a.supplier_id for a in seeded.adjustments).most_common(1)[0]
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await handle.result()
        first = await _live_entries(pool, handle.id)
        assert len(tryton.moves()) == 24
        undone = await asyncio.to_thread(recon_cli, env, "undo", handle.id, "--supplier",
                                         supplier, "--reason", "wrong PO", "--by", "asha",
                                         timeout=120)
        assert undone.returncode == 0, undone.stderr
        cancels = [m for m in tryton.moves() if m["description"].startswith("undo:")]
        assert len(cancels) == count
        originals = {m["id"]: m for m in tryton.moves()}
        for cancel in cancels:
            original = originals[int(cancel["origin"].split(",")[1])]
            assert cancel["description"] == f"undo:{original['description']}"
            assert cancel["paise"] == -original["paise"]
        redone = await asyncio.to_thread(recon_cli, env, "redo", handle.id, "--supplier", supplier,
                                         "--reason", "fixed PO", "--by", "asha", timeout=120)
        assert redone.returncode == 0, redone.stderr
    again = await _live_entries(pool, handle.id)
    held = _by_key(tryton)
    assert len(tryton.moves()) == 24 + 2 * count
    assert all(held[key] == [paise] for key, paise in again.items())
    assert sum(len(v) for k, v in held.items() if k in first) == 24


async def test_a_closed_period_hands_over_with_trytons_words_and_loses_nothing(
    pool: asyncpg.Pool, client: Client, night, stack, tryton: TrytonServer
) -> None:
    """The accountant closed the period: Tryton refuses the move in its own words, the run hands
    over naming them, the entries stay owed; once the period is open again, a person's retry
    posts each of them once."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=5)
    tryton.stop()
    tryton.set_period_state("closed")
    tryton.start()
    settings = _tryton_settings(queue, tryton)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        note = await first_handover(pool, handle.id)
        assert note["step"] == "post_adjustments" and note["attempts"] == 1
        assert "Tryton refused" in note["error_message"], note["error_message"]
        assert "period" in note["error_message"].lower(), note["error_message"]
        assert tryton.moves() == []
        # The batch was refused whole, then each entry alone: each refusal names its entry,
        # the handover the first of them.
        failed = await pool.fetch("SELECT reference, words FROM ledger_postings"
                                  " WHERE workflow_id = $1 AND state = 'failed'", handle.id)
        assert len(failed) == 5 and note["error_message"] in {f["words"] for f in failed}
        assert all(f["words"].startswith(f["reference"] + ": Tryton refused") for f in failed)
        assert await pool.fetchval("SELECT count(*) FROM ledger_postings WHERE workflow_id = $1"
                                   " AND state IN ('waiting', 'failed')", handle.id) == 5

        tryton.stop()
        tryton.set_period_state("open")
        tryton.start()
        approved = await asyncio.to_thread(
            recon_cli, stack.env(), "approve", handle.id, "--handover", "1", "--decision", "retry",
            "--by", "asha", "--note", "period reopened")
        assert approved.returncode == 0, approved.stderr
        await asyncio.wait_for(handle.result(), 120)
    entries = await _live_entries(pool, handle.id)
    assert _by_key(tryton) == {key: [paise] for key, paise in entries.items()}
    assert len(entries) == 5


async def test_a_claim_with_gst_puts_each_tax_part_on_its_account(
    pool: asyncpg.Pool, client: Client, night, stack, tmp_path, tryton: TrytonServer
) -> None:
    """₹600 over-billed at 18 % within Punjab: the claim is ₹708, the move debits the supplier's
    payable ₹708 and credits the variance ₹600, input CGST ₹54 and input SGST ₹54."""
    from recon.documents.formats.reading import PartyIds
    from recon.tools import gst_writer
    from tests.system.test_tax import OURS, _cli, _doc, _gstin, _order_and_receipt, _supplier

    day, warehouse, queue = night
    sid = f"I{warehouse.upper()}"
    gstin = _gstin("03", sid)
    await _supplier(pool, sid, gstin)
    await _order_and_receipt(pool, f"PO-{sid}", sid, warehouse, day)
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "intra.json").write_text(gst_writer.write(
        _doc(f"GST/{sid}/1", sid, day, f"PO-{sid}", 16_000), PartyIds(gstin=gstin)))
    await _cli(stack, "import", str(folder), "--date", day, "--warehouse", warehouse)
    settings = _tryton_settings(queue, tryton, gate_max_adjustment_share=1.0, own_gstin=OURS)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await asyncio.wait_for(handle.result(), 120)
    (key,) = (await _live_entries(pool, handle.id)).keys()
    assert tryton.lines() == {key: {"AP": 70_800, "PPV": -60_000, "CGST": -5_400, "SGST": -5_400}}
