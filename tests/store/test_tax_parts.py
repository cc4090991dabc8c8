"""The ledger keeps a claim's taxable part and each tax part, and a reversal reverses every part
(docs/books.md "Tax"): an accountant reverses the input tax credit from the parts alone."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from recon.domain.keys import adjustment_key, undo_key
from recon.store.ledger import LedgerEntry, TaxParts, post_entries

PARTS = ("taxable_paise", "cgst_paise", "sgst_paise", "igst_paise", "cess_paise", "vat_paise")


async def test_a_reversal_reverses_every_part(pool: asyncpg.Pool) -> None:
    run = f"recon-2026-10-13-tax{uuid.uuid4().hex[:6]}"
    claim = LedgerEntry(
        reference=adjustment_key(run, "INV-1", 1, "price"), workflow_id=run, invoice_no="INV-1",
        supplier_id="SUP-TAX", line_no=1, kind="price", amount_paise=70_800,
        parts=TaxParts(taxable_paise=60_000, cgst_paise=5_400, sgst_paise=5_400))
    untaxed = LedgerEntry(
        reference=adjustment_key(run, "INV-1", 2, "qty"), workflow_id=run, invoice_no="INV-1",
        supplier_id="SUP-TAX", line_no=2, kind="qty", amount_paise=1_000)
    async with pool.acquire() as conn:
        assert await post_entries(conn, [claim, untaxed]) == 2
        # as the undo writes a reversal: the amount negated, no parts given
        assert await post_entries(conn, [
            LedgerEntry(reference=undo_key(e.reference), workflow_id=run, invoice_no="INV-1",
                        supplier_id="SUP-TAX", line_no=e.line_no, kind="reversal",
                        amount_paise=-e.amount_paise, reverses=e.reference)
            for e in (claim, untaxed)]) == 2
    rows = {r["reference"]: r for r in await pool.fetch(
        "SELECT * FROM ledger_entries WHERE workflow_id = $1", run)}
    assert [rows[claim.reference][p] for p in PARTS] == [60_000, 5_400, 5_400, None, None, None]
    assert [rows[undo_key(claim.reference)][p] for p in PARTS] == \
        [-60_000, -5_400, -5_400, None, None, None]
    assert [rows[undo_key(untaxed.reference)][p] for p in PARTS] == [None] * 6
    net = await pool.fetchrow(
        "SELECT sum(amount_paise) AS amount, sum(taxable_paise) AS taxable,"
        " sum(cgst_paise) AS cgst, sum(sgst_paise) AS sgst FROM ledger_entries"
        " WHERE workflow_id = $1", run)
    assert dict(net) == {"amount": 0, "taxable": 0, "cgst": 0, "sgst": 0}


async def test_parts_must_make_the_amount(pool: asyncpg.Pool) -> None:
    run = f"recon-2026-10-13-tax{uuid.uuid4().hex[:6]}"
    wrong = LedgerEntry(
        reference=adjustment_key(run, "INV-1", 1, "price"), workflow_id=run, invoice_no="INV-1",
        supplier_id="SUP-TAX", line_no=1, kind="price", amount_paise=60_000,
        parts=TaxParts(taxable_paise=60_000, igst_paise=10_800))
    async with pool.acquire() as conn:
        with pytest.raises(asyncpg.CheckViolationError, match="parts_make_the_amount"):
            await post_entries(conn, [wrong])
