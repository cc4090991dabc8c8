"""The nightly run end to end, on the real embedded Temporal and Postgres."""

from __future__ import annotations

import asyncpg
import pytest
from temporalio.client import Client

from recon.domain.keys import invoice_label
from recon.mail.documents import claim_number
from recon.tools.seed import seed_night
from tests.helpers import inprocess_worker, ledger_rows, settings_for, start

# Real worker processes or whole nights: the slow tier (`uv run pytest -m "not slow"` skips it).
pytestmark = pytest.mark.slow


async def test_a_seeded_night_posts_exactly_the_flagged_adjustments(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    day, warehouse, queue = night
    seeded = await seed_night(pool, day, warehouse, invoices=80, mismatches=10, seed=3)
    stock_before = {
        r["sku"]: r["qty_on_hand"]
        for r in await pool.fetch("SELECT * FROM stock_levels WHERE warehouse = $1", warehouse)
    }
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        summary = await handle.result()

    wf = handle.id
    assert summary.status == "Completed"
    rows = await ledger_rows(pool, wf)
    posted = {(r["invoice_no"], r["line_no"], r["kind"], r["supplier_id"], r["amount_paise"])
              for r in rows}
    expected = {(a.invoice_no, a.line_no, a.kind, a.supplier_id, a.amount_paise)
                for a in seeded.adjustments}
    assert posted == expected
    assert len(rows) == 10
    assert all(r["reference"] == f"{wf}:{r['invoice_no']}:{r['line_no']}:{r['kind']}" for r in rows)

    # Stock: one movement per reconciled line, and the levels moved by exactly those quantities.
    moves = await pool.fetch("SELECT * FROM stock_movements WHERE workflow_id = $1", wf)
    compared = await pool.fetchval("SELECT count(*) FROM comparisons WHERE workflow_id = $1", wf)
    assert len(moves) == compared == summary.stock_movements > 0
    moved: dict[str, int] = {}
    for m in moves:
        moved[m["sku"]] = moved.get(m["sku"], 0) + m["qty"]
    after = {
        r["sku"]: r["qty_on_hand"]
        for r in await pool.fetch("SELECT * FROM stock_levels WHERE warehouse = $1", warehouse)
    }
    for sku, qty in moved.items():
        assert after[sku] == stock_before.get(sku, 0) + qty

    # Outbox: one debit note per supplier who billed too much, carrying its claim key; a summary.
    owed: dict[str, int] = {}
    for a in seeded.adjustments:
        owed[a.supplier_id] = owed.get(a.supplier_id, 0) + a.amount_paise
    notes = await pool.fetch(
        "SELECT * FROM outbox WHERE workflow_id = $1 AND kind = 'debit-note'", wf
    )
    assert {n["supplier_id"]: n["amount_paise"] for n in notes} == {
        s: v for s, v in owed.items() if v > 0
    }
    # Supplier-facing: the claim number (derived from the key) names the note, not the run id.
    assert all(claim_number(n["key"]) in n["body"] and wf not in n["body"] for n in notes)
    # A supplier reads its own invoice numbers, never our reference (`S001:INV-…`).
    for n in notes:
        for a in seeded.adjustments:
            if a.supplier_id == n["supplier_id"]:
                assert f"{a.number} line {a.line_no}" in n["body"] and a.invoice_no not in n["body"]
    summary_row = await pool.fetchrow(
        "SELECT * FROM outbox WHERE key = $1", f"{wf}:summary"
    )
    assert summary_row is not None and summary_row["kind"] == "summary"

    # Every unreadable invoice was parked, the run finished the others, the summary lists them.
    parked = {r["item_key"] for r in await pool.fetch(
        "SELECT item_key FROM parked_items WHERE workflow_id = $1", wf)}
    for invoice_no in seeded.unreadable:
        assert f"invoice:{invoice_no}" in parked
        assert invoice_label(invoice_no) in summary_row["body"], "finance reads INV-… (S0..)"
    for invoice_no, line_no in seeded.unknown_sku_lines:
        assert f"line:{invoice_no}:{line_no}" in parked
    assert summary.parked == len(parked)

    # Paid once, read once.
    assert await pool.fetchval("SELECT count(*) FROM model_calls WHERE workflow_id = $1", wf) == 80
    assert await pool.fetchval("SELECT count(*) FROM invoice_reads WHERE workflow_id = $1", wf) == 80


async def test_starting_the_same_night_twice_is_one_run(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=20, mismatches=3)
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        first = await start(client, settings, day, warehouse)
        second = await start(client, settings, day, warehouse)
        assert first.id == second.id
        assert (await first.describe()).run_id == (await second.describe()).run_id
        await first.result()
    assert len(await ledger_rows(pool, first.id)) == 3
