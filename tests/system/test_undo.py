"""Undo as a saga: reversals, opposite stock movements and withdrawal notes, newest first, for a
whole run or one supplier; crash-safe and idempotent. History is never deleted."""

from __future__ import annotations

import asyncio
from collections import Counter

import asyncpg
import pytest
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy

from recon.domain.labels import RECON_DATE, RECON_STATUS, RECON_WAREHOUSE
from recon.tools.seed import seed_night
from tests.approvers import signed_undo
from tests.helpers import inprocess_worker, recon_cli, settings_for, start
from workflows.undo import UndoReconciliation

UNDO_REASON = "supplier keeps overbilling; ticket FIN-4411"  # internal, never mailed

# Real worker processes or whole nights: the slow tier (`uv run pytest -m "not slow"` skips it).
pytestmark = pytest.mark.slow


async def _finished_night(pool, client, night, invoices=120, mismatches=24):
    day, warehouse, queue = night
    seeded = await seed_night(pool, day, warehouse, invoices=invoices, mismatches=mismatches)
    levels_before = await _levels(pool, warehouse)
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await handle.result()
    return seeded, levels_before, handle.id, settings


async def _levels(pool: asyncpg.Pool, warehouse: str) -> dict[str, int]:
    return {r["sku"]: r["qty_on_hand"] for r in await pool.fetch(
        "SELECT sku, qty_on_hand FROM stock_levels WHERE warehouse = $1", warehouse)}


async def _rows(pool: asyncpg.Pool, table: str, wf: str, where: str = "TRUE") -> list[tuple]:
    key = {"ledger_entries": "reference"}.get(table, "key")
    return [tuple(r) for r in await pool.fetch(
        f"SELECT * FROM {table} WHERE workflow_id = $1 AND {where} ORDER BY {key}", wf)]


async def test_undo_of_one_supplier_touches_nothing_else(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    seeded, levels_before, wf, settings = await _finished_night(pool, client, night)
    supplier, count = Counter(a.supplier_id for a in seeded.adjustments).most_common(1)[0]
    assert count >= 2
    others = f"supplier_id <> '{supplier}'"
    before = {t: await _rows(pool, t, wf, others)
              for t in ("ledger_entries", "stock_movements", "outbox")}
    levels_after_run = await _levels(pool, night[1])

    async with inprocess_worker(settings):
        done = await asyncio.to_thread(recon_cli, stack.env(RECON_TASK_QUEUE=settings.task_queue), "undo", wf,
                         "--supplier", supplier, "--reason", UNDO_REASON,
                         "--by", "asha")
    assert done.returncode == 0, done.stderr
    assert f"{count} ledger reversals" in done.stdout

    net = await pool.fetchval(
        "SELECT sum(amount_paise) FROM ledger_entries WHERE workflow_id = $1 AND supplier_id = $2",
        wf, supplier)
    assert net == 0
    reversals = await pool.fetch(
        "SELECT * FROM ledger_entries WHERE workflow_id = $1 AND reverses IS NOT NULL", wf)
    assert len(reversals) == count
    assert all(r["reference"] == f"undo:{r['reverses']}" for r in reversals)
    # Stock: the supplier's movements are all reversed; only the others' remain in the levels.
    moved = await pool.fetch(
        "SELECT sku, sum(qty) AS qty FROM stock_movements WHERE workflow_id = $1 GROUP BY sku", wf)
    after = await _levels(pool, night[1])
    for row in moved:
        assert after[row["sku"]] == levels_before[row["sku"]] + row["qty"]
    supplier_net = await pool.fetch(
        "SELECT sku, sum(qty) AS qty FROM stock_movements WHERE workflow_id = $1"
        " AND supplier_id = $2 GROUP BY sku", wf, supplier)
    assert supplier_net and all(r["qty"] == 0 for r in supplier_net)
    assert after != levels_after_run
    withdrawals = await pool.fetch(
        "SELECT * FROM outbox WHERE workflow_id = $1 AND kind = 'withdrawal'", wf)
    assert len(withdrawals) == 1 and withdrawals[0]["supplier_id"] == supplier
    assert withdrawals[0]["reverses"] == f"{wf}:debit-note:{supplier}"
    # The supplier reads a supplier-facing reason, never the undo's internal --reason.
    assert "Reason: we reviewed this claim" in withdrawals[0]["body"]
    assert UNDO_REASON not in withdrawals[0]["body"]
    for table, rows in before.items():
        assert await _rows(pool, table, wf, others) == rows, table
    # In the Web UI: the supplier's undo carries the night's labels (listed beside it) and says
    # what it undid in words and ₹.
    undo = await client.get_workflow_handle(f"undo-{wf}-supplier-{supplier}").describe()
    night_labels = (await client.get_workflow_handle(wf).describe()).typed_search_attributes
    assert [undo.typed_search_attributes.get(k) for k in (RECON_WAREHOUSE, RECON_DATE, RECON_STATUS)
            ] == [night[1], night_labels.get(RECON_DATE), "Undone"]
    assert (await undo.memo())["headline"]["undone"].startswith(
        f"Undone: {wf} (supplier {supplier}): {count} ledger entries reversed (₹")


async def test_undo_of_a_whole_run_and_the_same_undo_twice(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    seeded, levels_before, wf, settings = await _finished_night(pool, client, night)
    notes = await pool.fetchval(
        "SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'debit-note'", wf)
    request = await signed_undo(pool, stack.state, wf, by="ravi")
    async with inprocess_worker(settings):
        handles = await asyncio.gather(*(
            client.start_workflow(
                UndoReconciliation.run, request, id=request.workflow_id(),
                task_queue=settings.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING)
            for _ in range(2)))
        results = await asyncio.gather(*(h.result() for h in handles))
    assert results[0] == results[1], "starting the same undo twice is the same undo"
    per_invoice = await pool.fetch(
        "SELECT invoice_no, sum(amount_paise) AS net FROM ledger_entries WHERE workflow_id = $1"
        " GROUP BY invoice_no", wf)
    assert per_invoice and all(r["net"] == 0 for r in per_invoice)
    assert await _levels(pool, night[1]) == levels_before
    assert await pool.fetchval(
        "SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'withdrawal'", wf) == notes
    counts = [await pool.fetchval(f"SELECT count(*) FROM {t} WHERE workflow_id = $1", wf)
              for t in ("ledger_entries", "stock_movements", "outbox")]

    again = await asyncio.to_thread(recon_cli, stack.env(RECON_TASK_QUEUE=settings.task_queue), "undo", wf,
                      "--reason", "again", "--by", "asha")
    assert again.returncode != 0 and "nothing to undo" in again.stderr
    assert [await pool.fetchval(f"SELECT count(*) FROM {t} WHERE workflow_id = $1", wf)
            for t in ("ledger_entries", "stock_movements", "outbox")] == counts


async def test_a_worker_killed_in_the_middle_of_an_undo(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    seeded, _levels_before, wf, settings = await _finished_night(pool, client, night)
    originals = await pool.fetchval(
        "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1", wf)
    doomed = spawn_worker(settings.task_queue, RECON_FAILPOINTS="reverse_ledger_entries:7",
                          RECON_POST_BATCH="3")
    request = await signed_undo(pool, stack.state, wf)
    handle = await client.start_workflow(
        UndoReconciliation.run, request, id=request.workflow_id(),
        task_queue=settings.task_queue)
    assert await doomed.wait_exit(60) == 137
    partly = await pool.fetchval(
        "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1 AND reverses IS NOT NULL", wf)
    assert partly == 6, "two batches of three committed before the crash"
    spawn_worker(settings.task_queue)
    await asyncio.wait_for(handle.result(), 60)
    reversed_once = await pool.fetch(
        "SELECT reverses, count(*) AS n FROM ledger_entries WHERE workflow_id = $1"
        " AND reverses IS NOT NULL GROUP BY reverses", wf)
    assert len(reversed_once) == originals and all(r["n"] == 1 for r in reversed_once)
    stock = await pool.fetch(
        "SELECT reverses, count(*) AS n FROM stock_movements WHERE workflow_id = $1"
        " AND reverses IS NOT NULL GROUP BY reverses", wf)
    assert all(r["n"] == 1 for r in stock)


async def test_dry_run_changes_nothing_and_bad_requests_are_refused(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    seeded, _levels_before, wf, settings = await _finished_night(pool, client, night, 60, 8)
    env = stack.env(RECON_TASK_QUEUE=settings.task_queue)
    tables = ("ledger_entries", "stock_movements", "outbox")
    before = [await _rows(pool, t, wf) for t in tables]
    dry = await asyncio.to_thread(recon_cli, env, "undo", wf, "--reason", "check", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run" in dry.stdout and "8 reversal entries" in dry.stdout
    assert [await _rows(pool, t, wf) for t in tables] == before

    for args, reason in [
        (("recon-1999-01-01-nowhere",), "no run"),
        ((wf, "--supplier", "S999"), "unknown supplier"),
    ]:
        refused = await asyncio.to_thread(recon_cli, env, "undo", *args, "--reason", "x", "--by", "asha")
        assert refused.returncode != 0 and reason in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert [await _rows(pool, t, wf) for t in tables] == before
