"""`recon status` for every workflow the product starts (the run, its undos, a redo id), with no
worker up: Temporal's status, the business status, and counts that come from the ledger."""

from __future__ import annotations

import asyncio
from collections import Counter

import asyncpg
from temporalio.client import Client

from recon.domain.money import rupees
from recon.tools.seed import seed_night
from tests.helpers import inprocess_worker, recon_cli, settings_for, start, wait_for


def _status(stack, wid: str, queue: str):
    return recon_cli(stack.env(RECON_TASK_QUEUE=queue), "status", wid)


async def _cli(stack, queue: str, *args: str):
    return await asyncio.to_thread(recon_cli, stack.env(RECON_TASK_QUEUE=queue), *args)


async def test_status_of_a_run_and_its_undos_comes_from_the_ledger(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    day, warehouse, queue = night
    seeded = await seed_night(pool, day, warehouse, invoices=40, mismatches=8)
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await handle.result()
    wf, total = handle.id, sum(a.amount_paise for a in seeded.adjustments)
    moves = await pool.fetchval("SELECT count(*) FROM stock_movements WHERE workflow_id = $1", wf)
    assert moves > 0

    done = await asyncio.to_thread(_status, stack, wf, queue)  # no worker is up now
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"{wf}: completed (Completed)" in out
    assert f"ledger: 8 live entries, 0 reversals, net {rupees(total)}" in out
    assert f"stock movements: {moves} live, 0 opposite" in out
    assert "send_summary" in out and "post_adjustments" in out
    assert "handovers: 0 pending of 0" in out
    assert "no worker" not in out and "current step" not in out

    supplier, count = Counter(a.supplier_id for a in seeded.adjustments).most_common(1)[0]
    supplier_paise = sum(a.amount_paise for a in seeded.adjustments if a.supplier_id == supplier)
    async with inprocess_worker(settings):
        undone = await _cli(stack, queue, "undo", wf, "--supplier", supplier,
                            "--reason", "agreed", "--by", "asha")
        assert undone.returncode == 0, undone.stderr
    undo_id = f"undo-{wf}-supplier-{supplier}"
    done = await asyncio.to_thread(_status, stack, undo_id, queue)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"{undo_id}: completed (Undone)" in out, out
    assert "reverse_ledger_entries" in out
    assert f"for run {wf}:" in out and f"{wf}: completed (Completed)" in out
    assert (f"ledger: {8 - count} live entries, {count} reversals, "
            f"net {rupees(total - supplier_paise)}") in out

    async with inprocess_worker(settings):
        undone = await _cli(stack, queue, "undo", wf, "--reason", "wrong night", "--by", "asha")
        assert undone.returncode == 0, undone.stderr
    for wid in (f"undo-{wf}", wf):
        done = await asyncio.to_thread(_status, stack, wid, queue)
        assert done.returncode == 0, done.stderr
        assert "ledger: 0 live entries, 8 reversals, net ₹0" in done.stdout, done.stdout
        # never "completed (Completed) ... net ₹0" alone: the night was posted, then undone
        assert f"{wf}: completed (Completed), then undone: every entry reversed" in done.stdout, \
            done.stdout
        assert f"stock movements: 0 live, {moves} opposite" in done.stdout


async def test_status_of_a_run_waiting_for_a_person(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=30, mismatches=4)
    wf = f"recon-{day}-{warehouse}"
    trigger = f"status_reject_{warehouse}"
    await pool.execute(f"""
        CREATE FUNCTION {trigger}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'ledger closed for audit'; END $$;
        CREATE TRIGGER {trigger} BEFORE INSERT ON ledger_entries FOR EACH ROW
        WHEN (NEW.workflow_id = '{wf}') EXECUTE FUNCTION {trigger}();
    """)
    settings = settings_for(queue)
    try:
        async with inprocess_worker(settings):
            handle = await start(client, settings, day, warehouse)
            await wait_for(lambda: pool.fetchval(
                "SELECT 1 FROM handovers WHERE workflow_id = $1", wf), 60, "a handover")
            await asyncio.sleep(0.5)  # the search attribute follows the handover record
        done = await asyncio.to_thread(_status, stack, wf, queue)
        assert done.returncode == 0, done.stderr
        assert f"{wf}: running (AwaitingDecision)" in done.stdout, done.stdout
        assert "current step: post_adjustments" in done.stdout
        assert "handovers: 1 pending of 1" in done.stdout
        assert "ledger: 0 live entries" in done.stdout
    finally:
        await pool.execute(f"DROP TRIGGER {trigger} ON ledger_entries; DROP FUNCTION {trigger}()")
        await handle.terminate("test done")


async def test_status_of_a_redo_id_and_of_nothing(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    day, warehouse, queue = night
    dashed = f"{warehouse}-a-b"  # a warehouse code with dashes: the run id cannot be cut blindly
    await seed_night(pool, day, dashed, invoices=20, mismatches=2)
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, dashed)
        await handle.result()
    done = await asyncio.to_thread(_status, stack, f"redo-{handle.id}-g2", queue)
    assert done.returncode == 0, done.stderr
    assert f"redo-{handle.id}-g2: not in Temporal" in done.stdout
    assert f"for run {handle.id}:" in done.stdout
    assert "ledger: 2 live entries" in done.stdout

    for wid in ("recon-2031-01-01-none", "undo-recon-2031-01-01-none"):
        missing = await asyncio.to_thread(_status, stack, wid, queue)
        assert missing.returncode == 1
        assert missing.stderr.startswith(f"error: no run '{wid}'")
        assert len(missing.stderr.strip().splitlines()) == 1
