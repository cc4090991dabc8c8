"""`recon seed --nights N` as a user runs it, and a seeded month run night after night: each night
posts exactly the claims the seed stated, books exactly the stated stock, leaves the stated lines
held awaiting receipt, and flags the re-bill as a possible duplicate at the gate.

The runs of the month need the cumulative three-way match (docs/design.md); the CLI tests do not.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import asyncpg
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from recon.domain.keys import invoice_label
from recon.ops.decisions import send_decision
from recon.runtime.config import MAX_PAISE
from recon.tools.seed import seed_month
from tests.approvers import signed
from tests.helpers import inprocess_worker, recon_cli, settings_for, start, wait_for

FIRST = "2026-10-13"


@pytest.mark.parametrize(("args", "named"), [
    (("--nights", "0"), "--nights must be 1 to 366, got 0"),
    (("--nights", "-2"), "--nights must be 1 to 366, got -2"),
    (("--nights", "367"), "--nights must be 1 to 366, got 367"),
    (("--nights", "20", "--invoices", "60000"), "at most 1,000,000 are seeded in one go"),
    (("--nights", "3", "--date", "9999-12-30"), "runs past the calendar"),
    (("--nights", "x"), "--nights"),
])
async def test_a_month_that_cannot_be_seeded_is_one_line_and_writes_nothing(
    stack, pool: asyncpg.Pool, args, named
) -> None:
    wh = f"refuse{abs(hash(args)) % 10_000}"
    done = await asyncio.to_thread(recon_cli, stack.env(), "seed", "--date", FIRST,
                                   "--warehouse", wh, *args)
    assert done.returncode in (1, 2), done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("error: ") and named in lines[0]
    assert await pool.fetchval("SELECT count(*) FROM invoices WHERE warehouse = $1", wh) == 0


async def test_seed_nights_prints_each_night_and_refuses_a_second_time(stack, pool) -> None:
    env = stack.env()
    args = ("seed", "--date", FIRST, "--warehouse", "monthcli", "--nights", "3",
            "--invoices", "20", "--mismatches", "2", "--seed", "4")
    done = await asyncio.to_thread(recon_cli, env, *args)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith(f"seeded 3 nights from {FIRST} at monthcli: ")
    per_night = {str(r["business_date"]): r["n"] for r in await pool.fetch(
        "SELECT business_date, count(*) AS n FROM invoices WHERE warehouse = 'monthcli' GROUP BY 1")}
    assert sorted(per_night) == ["2026-10-13", "2026-10-14", "2026-10-15"]
    for line, (day, count) in zip(lines[1:], sorted(per_night.items()), strict=True):
        assert line.strip().startswith(f"{day}: {count} invoices, ")
    assert sum(per_night.values()) == int(lines[0].split(": ")[1].split()[0])
    again = await asyncio.to_thread(recon_cli, env, *args)
    assert again.returncode == 1 and "already has" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


async def test_one_night_is_the_single_night_it_always_was(stack, pool) -> None:
    """`--nights 1` is today's seed: the same line, no stories."""
    done = await asyncio.to_thread(recon_cli, stack.env(), "seed", "--date", FIRST, "--warehouse",
                                   "monthone", "--nights", "1", "--invoices", "30",
                                   "--mismatches", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"seeded 30 invoices for {FIRST} at monthone: 3 adjustments due")
    assert await pool.fetchval(
        "SELECT count(*) FROM invoices WHERE warehouse = 'monthone' AND invoice_no ~ '-M[0-9]{3}$'") == 0


# ------------------------------------------------------------------ the month, run (new matching)
async def _run_night(client: Client, pool: asyncpg.Pool, settings, day: str, wh: str, state,
                     expect_duplicate: bool):
    """Run one night; answer a gate hold for a possible duplicate with a signed resume."""
    handle = await start(client, settings, day, wh)
    if expect_duplicate:
        async def waiting():
            note = await handle.query("pending_handover")
            return note if note else None

        note = await wait_for(waiting, 120, f"the gate to hold {day} for a person")
        decision = await signed(pool, state, handle.id, "resume", handover_no=note["handover_no"],
                                note="checked with the supplier: billed twice by mistake")
        await send_decision(client, handle.id, decision)
    summary = await handle.result()
    status = (await handle.describe()).status
    assert status == WorkflowExecutionStatus.COMPLETED and summary.status == "Completed"
    return handle.id


@pytest.mark.slow
async def test_a_seeded_month_posts_what_the_seed_stated_night_by_night(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    """Needs the cumulative three-way match: held lines, cross-night quantities, duplicates."""
    _day, wh, queue = night
    month = await seed_month(pool, FIRST, wh, 5, invoices=20, mismatches=4, seed=3)
    settings = settings_for(queue, gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0,
                            gate_max_total_paise=MAX_PAISE, gate_max_supplier_paise=MAX_PAISE)
    async with inprocess_worker(settings):
        for expected in month.nights:
            wf = await _run_night(client, pool, settings, expected.business_date, wh,
                                  stack.state, bool(expected.duplicates))
            ledger = await pool.fetch("SELECT * FROM ledger_entries WHERE workflow_id = $1", wf)
            assert {(r["invoice_no"], r["line_no"], r["kind"], r["supplier_id"], r["amount_paise"])
                    for r in ledger} == {
                (a.invoice_no, a.line_no, a.kind, a.supplier_id, a.amount_paise)
                for a in expected.claims}, expected.business_date
            assert all(r["reference"].startswith(f"{wf}:") for r in ledger), "the claiming night's keys"
            moved = Counter()
            for m in await pool.fetch("SELECT sku, qty FROM stock_movements WHERE workflow_id = $1",
                                      wf):
                moved[m["sku"]] += m["qty"]
            assert +moved == Counter(expected.stock), expected.business_date
            # Held lines: exactly the stated ones, with nothing claimed or booked for them.
            held = {(r["invoice_no"], r["supplier_id"], r["line_no"]) for r in await pool.fetch(
                "SELECT invoice_no, supplier_id, line_no FROM held_lines WHERE workflow_id = $1", wf)}
            assert held == {(h.invoice_no, h.supplier_id, h.line_no) for h in expected.held}
            claimed = {(r["invoice_no"], r["supplier_id"], r["line_no"]) for r in ledger}
            booked = {(m["invoice_no"], m["supplier_id"], m["line_no"]) for m in await pool.fetch(
                "SELECT invoice_no, supplier_id, line_no FROM stock_movements"
                " WHERE workflow_id = $1 AND qty <> 0", wf)}
            assert not held & (claimed | booked), expected.business_date
            # The re-bill: flagged by content, naming the first bill, in what the person read.
            evidence = " ".join(
                [r["note"] for r in await pool.fetch(
                    "SELECT note FROM handovers WHERE workflow_id = $1", wf)]
                + [str(r["evidence"]) for r in await pool.fetch(
                    "SELECT evidence FROM parked_items WHERE workflow_id = $1", wf)])
            for duplicate in expected.duplicates:
                # as finance reads it (`INV-... (S020)`), never our reference (`S020:INV-...`)
                assert f"possible duplicate of {invoice_label(duplicate.of_invoice_no)}" in evidence
