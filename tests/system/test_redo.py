"""Redo after undo, and "done" meaning live: a night that was undone and is redone by `recon redo`
posts the night's entries again exactly once, under fresh keys; a reset of a night that was not
undone posts nothing new, and of one that was is a redo nobody signed (refused); two redos at
once post once."""

from __future__ import annotations

import asyncio
import subprocess
from collections import Counter

import asyncpg
import pytest
from temporalio.client import Client, WorkflowFailureError

from recon.domain.models import RunSummary
from recon.runtime.embedded import temporal_binary
from recon.tools.seed import seed_night
from tests.approvers import key_path
from tests.helpers import inprocess_worker, recon_cli, settings_for, start

# Real worker processes or whole nights: the slow tier (`uv run pytest -m "not slow"` skips it).
pytestmark = pytest.mark.slow


async def _night(pool, client, night, invoices=80, mismatches=12):
    day, warehouse, queue = night
    seeded = await seed_night(pool, day, warehouse, invoices=invoices, mismatches=mismatches)
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await handle.result()
    due = sum(a.amount_paise for a in seeded.adjustments)
    return seeded, handle.id, settings, due


async def _live(pool: asyncpg.Pool, wf: str, supplier: str | None = None) -> tuple[int, int]:
    row = await pool.fetchrow(
        "SELECT count(*) AS n, coalesce(sum(amount_paise), 0) AS total FROM live_ledger_entries"
        " WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)", wf, supplier)
    return row["n"], int(row["total"])


async def _net(pool: asyncpg.Pool, wf: str, supplier: str | None = None) -> int:
    return int(await pool.fetchval(
        "SELECT coalesce(sum(amount_paise), 0) FROM ledger_entries WHERE workflow_id = $1"
        " AND ($2::text IS NULL OR supplier_id = $2)", wf, supplier))


async def _stock_net(pool: asyncpg.Pool, wf: str) -> dict[str, int]:
    return {r["key"]: r["qty"] for r in await pool.fetch(
        "SELECT regexp_replace(regexp_replace(key, '^undo:', ''), ':g[0-9]+$', '') AS key,"
        " sum(qty) AS qty FROM stock_movements WHERE workflow_id = $1 GROUP BY 1", wf)}


def _cli(stack, settings, *args):
    return recon_cli(stack.env(RECON_TASK_QUEUE=settings.task_queue), *args, timeout=120)


async def test_whole_run_undo_then_redo_posts_the_night_once_more(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    seeded, wf, settings, due = await _night(pool, client, night)
    stock_before = await _stock_net(pool, wf)
    async with inprocess_worker(settings):
        undone = await asyncio.to_thread(_cli, stack, settings, "undo", wf, "--reason", "wrong PO file",
                                         "--by", "asha")
        assert undone.returncode == 0, undone.stderr
        assert await _live(pool, wf) == (0, 0) and await _net(pool, wf) == 0

        redone = await asyncio.to_thread(_cli, stack, settings, "redo", wf, "--reason",
                                         "PO file fixed", "--by", "asha")
        assert redone.returncode == 0, redone.stderr
        assert "redo finished" in redone.stdout

        # Once: the night's adjustments are live exactly once, under keys of generation 2.
        n = len(seeded.adjustments)
        assert await _live(pool, wf) == (n, due)
        assert await _net(pool, wf) == due
        rows = await pool.fetch("SELECT reference FROM ledger_entries WHERE workflow_id = $1", wf)
        assert len(rows) == 3 * n == len({r["reference"] for r in rows})
        assert sum(r["reference"].endswith(":g2") for r in rows) == n
        # Stock: every line booked once net (original, reversal, redo).
        assert await _stock_net(pool, wf) == stock_before
        notes = await pool.fetch(
            "SELECT key FROM live_debit_notes WHERE workflow_id = $1", wf)
        owed = {a.supplier_id for a in seeded.adjustments}
        assert len(notes) <= len(owed) and all(k["key"].endswith(":g2") for k in notes)

        again = await asyncio.to_thread(_cli, stack, settings, "redo", wf, "--reason", "x",
                                        "--by", "asha")
        assert again.returncode != 0 and "nothing to redo" in again.stderr
        assert len(again.stderr.strip().splitlines()) == 1


async def test_supplier_undo_then_redo_of_that_supplier_touches_no_one_else(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    seeded, wf, settings, due = await _night(pool, client, night)
    supplier, count = Counter(a.supplier_id for a in seeded.adjustments).most_common(1)[0]
    owed = sum(a.amount_paise for a in seeded.adjustments if a.supplier_id == supplier)
    others_before = [tuple(r) for r in await pool.fetch(
        "SELECT * FROM ledger_entries WHERE workflow_id = $1 AND supplier_id <> $2"
        " ORDER BY reference", wf, supplier)]
    async with inprocess_worker(settings):
        undone = await asyncio.to_thread(_cli, stack, settings, "undo", wf, "--supplier", supplier,
                                         "--reason", "disputed", "--by", "asha")
        assert undone.returncode == 0, undone.stderr
        assert await _live(pool, wf, supplier) == (0, 0)
        redone = await asyncio.to_thread(_cli, stack, settings, "redo", wf, "--supplier", supplier,
                                         "--reason", "dispute settled", "--by", "asha")
        assert redone.returncode == 0, redone.stderr
    assert await _live(pool, wf, supplier) == (count, owed)
    assert await _net(pool, wf, supplier) == owed
    assert await _live(pool, wf) == (len(seeded.adjustments), due)
    others_after = [tuple(r) for r in await pool.fetch(
        "SELECT * FROM ledger_entries WHERE workflow_id = $1 AND supplier_id <> $2"
        " ORDER BY reference", wf, supplier)]
    assert others_after == others_before


async def test_a_reset_without_an_undo_posts_nothing_and_after_one_it_needs_a_signed_redo(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    """A reset is a replay or a redo (issue 39, item 2): of a night not undone it posts nothing
    new; of an undone night it is a redo nobody signed, refused before it posts; `recon redo`
    then posts the night once."""
    seeded, wf, settings, due = await _night(pool, client, night)

    def reset() -> None:
        done = subprocess.run(
            [temporal_binary(), "workflow", "reset", "--address", stack.temporal_address,
             "-w", wf, "--type", "FirstWorkflowTask", "--reason", "test", "-y"],
            capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr

    async def counts() -> tuple:
        return tuple(await pool.fetchrow(
            "SELECT (SELECT count(*) FROM ledger_entries WHERE workflow_id = $1) AS l,"
            " (SELECT count(*) FROM stock_movements WHERE workflow_id = $1) AS s,"
            " (SELECT count(*) FROM outbox WHERE workflow_id = $1) AS o", wf))

    async with inprocess_worker(settings):
        # Not undone: a reset of the whole night writes no new row anywhere.
        before = await counts()
        await asyncio.to_thread(reset)
        summary = await client.get_workflow_handle(wf, result_type=RunSummary).result()
        assert summary.status == "Completed"
        assert await counts() == before

        # Undone, then reset: a redo nobody signed. Refused; nothing posted, booked or mailed.
        undone = await asyncio.to_thread(_cli, stack, settings, "undo", wf, "--reason", "x",
                                         "--by", "asha")
        assert undone.returncode == 0, undone.stderr
        after_undo = await counts()
        await asyncio.to_thread(reset)
        with pytest.raises(WorkflowFailureError) as failed:
            await client.get_workflow_handle(wf).result()
        assert getattr(failed.value.cause, "type", None) == "RequestRefused"
        assert "no signed redo" in str(failed.value.cause)
        assert await counts() == after_undo and await _live(pool, wf) == (0, 0)

        redone = await asyncio.to_thread(_cli, stack, settings, "redo", wf, "--reason", "y",
                                         "--by", "asha")
        assert redone.returncode == 0, redone.stderr
    assert await _live(pool, wf) == (len(seeded.adjustments), due)
    assert await _net(pool, wf) == due


async def test_two_redos_at_once_post_once(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    seeded, wf, settings, due = await _night(pool, client, night)
    async with inprocess_worker(settings):
        undone = await asyncio.to_thread(_cli, stack, settings, "undo", wf, "--reason", "x",
                                         "--by", "asha")
        assert undone.returncode == 0, undone.stderr
        results = await asyncio.gather(*(
            asyncio.to_thread(recon_cli, stack.env(
                RECON_TASK_QUEUE=settings.task_queue,
                RECON_APPROVER_KEY=str(key_path(stack.state, who))),
                "redo", wf, "--reason", "r", "--by", who, timeout=120)
            for who in ("asha", "ravi")
        ))
    ok = [r for r in results if r.returncode == 0]
    assert ok, [r.stderr for r in results]
    for r in results:  # the other one either attached to the same redo or found nothing left
        assert r.returncode == 0 or "nothing to redo" in r.stderr, r.stderr
    assert await _live(pool, wf) == (len(seeded.adjustments), due)
    refs = await pool.fetch("SELECT reference FROM ledger_entries WHERE workflow_id = $1", wf)
    assert len(refs) == 3 * len(seeded.adjustments)
