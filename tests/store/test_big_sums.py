"""Sums that could overflow a bigint cannot (Postgres only): every sum over a night's amounts
is numeric and an int in Python, and the lines themselves are bounded so that no product of
quantity and price leaves a bigint (migration 013)."""

from __future__ import annotations

import asyncpg
import pytest

from recon.store.gate import gate_figures
from recon.store.inspection import inspection_counts, status_counts
from recon.store.ledger import live_adjustment_total
from recon.store.run_facts import run_facts

BIG = 4 * 10**18  # three of these pass 2^63 - 1 (about 9.22 * 10^18)


async def test_sums_beyond_bigint_are_exact(pool: asyncpg.Pool, night) -> None:
    day, warehouse, _ = night
    wf = f"recon-{day}-{warehouse}"
    await pool.executemany(
        "INSERT INTO ledger_entries (reference, workflow_id, invoice_no, supplier_id, line_no,"
        " kind, amount_paise) VALUES ($1, $2, 'INV-BIG', 'S001', $3, 'qty', $4)",
        [(f"{wf}:INV-BIG:{n}:qty", wf, n, BIG) for n in (1, 2, 3)])
    assert await live_adjustment_total(pool, wf) == 3 * BIG
    assert (await inspection_counts(pool, wf))["ledger_net_paise"] == 3 * BIG
    assert (await status_counts(pool, wf))["ledger_net_paise"] == 3 * BIG
    assert (await run_facts(pool, wf)).adjustment_total_paise == 3 * BIG
    assert (await gate_figures(pool, wf)).moved == 0  # no mismatches: the gate reads those


@pytest.mark.parametrize(("qty", "price"), [(10_000_001, 1), (1, 100_000_000_001), (0, 1)])
async def test_a_line_outside_the_bounds_is_refused_by_postgres(
    pool: asyncpg.Pool, night, qty: int, price: int
) -> None:
    day, warehouse, _ = night
    with pytest.raises(asyncpg.CheckViolationError):
        await pool.execute(
            "INSERT INTO invoice_lines (workflow_id, invoice_no, line_no, supplier_id, sku,"
            " description, qty, unit_price_paise) VALUES ($1, 'INV-X', 1, 'S001', 'SKU', '',"
            " $2, $3)", f"recon-{day}-{warehouse}", qty, price)
