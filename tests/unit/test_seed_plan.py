"""The seed planner decides a whole night in memory: the same inputs always plan the same night,
with exactly the counts asked for, and the mismatches it plants are the adjustments it states."""

from __future__ import annotations

import pytest

from recon.documents.extraction.offline import parse_document
from recon.domain.keys import invoice_ref
from recon.tools.seed import SeedError, night_chunks
from recon.tools.seed import plan_night as _plan_night

DAY, WH = "2026-10-13", "ldh"


def plan_night(business_date: str, warehouse: str, invoices: int, mismatches: int, seed: int):
    """The planned night's rows (all chunks) and its result, as one value to compare."""
    plan = _plan_night(business_date, warehouse, invoices, mismatches, seed)
    rows: dict[str, list] = {"invoices": [], "purchase_orders": [], "po_lines": [],
                             "goods_receipts": []}
    for chunk in night_chunks(plan):
        for name, found in rows.items():
            found.extend(getattr(chunk, name))
    return rows, plan.result


def test_the_same_inputs_plan_the_same_night() -> None:
    assert plan_night(DAY, WH, 150, 30, 7) == plan_night(DAY, WH, 150, 30, 7)


@pytest.mark.parametrize("changed", [
    dict(seed=8), dict(business_date="2026-10-14"), dict(warehouse="blr"),
])
def test_another_seed_date_or_warehouse_plans_another_night(changed: dict) -> None:
    args = dict(business_date=DAY, warehouse=WH, invoices=150, mismatches=30, seed=7)
    assert plan_night(**args) != plan_night(**(args | changed))


@pytest.mark.parametrize(("invoices", "mismatches", "unreadable", "no_po"), [
    (1, 0, 0, 0),
    (19, 5, 0, 0),
    (20, 5, 1, 1),
    (312, 40, 3, 2),
    (1000, 100, 10, 6),
])
def test_the_counts_are_as_asked(invoices: int, mismatches: int, unreadable: int, no_po: int) -> None:
    rows, result = plan_night(DAY, WH, invoices, mismatches, 7)
    assert len(rows["invoices"]) == len(rows["purchase_orders"]) == result.invoices == invoices
    assert len(result.adjustments) == mismatches
    assert len(result.unreadable) == unreadable
    assert len(result.no_po_invoices) == no_po
    assert len({r[0] for r in rows["invoices"]}) == invoices, "invoice numbers are unique"
    assert {a.kind for a in result.adjustments} <= {"qty", "price"}
    assert all(a.amount_paise > 0 for a in result.adjustments)
    assert len({(a.invoice_no, a.line_no) for a in result.adjustments}) == mismatches


def test_each_planted_mismatch_is_the_adjustment_it_states() -> None:
    rows, result = plan_night(DAY, WH, 200, 40, 11)
    ordered = {(po, sku): (qty, price) for po, sku, _d, qty, price in rows["po_lines"]}
    received = {(po, sku): qty for po, sku, _wh, qty, *_ in rows["goods_receipts"]}
    documents = {invoice_ref(r[1], r[0]): parse_document(r[4]) for r in rows["invoices"]
                 if invoice_ref(r[1], r[0]) not in result.unreadable}
    for adj in result.adjustments:
        invoice = documents[adj.invoice_no]
        line = invoice.lines[adj.line_no - 1]
        assert invoice.supplier_id == adj.supplier_id
        po_qty, po_price = ordered[(invoice.po_number, line.sku)]
        if adj.kind == "qty":
            # A short delivery bills beyond a closed order: the PO holds what arrived, the
            # document bills more (so the cumulative match flags it the same night).
            got = received[(invoice.po_number, line.sku)]
            assert po_qty == got < line.quantity and line.unit_price_paise == po_price
            assert adj.amount_paise == (line.quantity - got) * po_price
        else:
            assert received[(invoice.po_number, line.sku)] == po_qty
            assert adj.amount_paise == (line.unit_price_paise - po_price) * line.quantity


@pytest.mark.parametrize(("args", "reason"), [
    (("13-10-2026", WH, 10, 1, 7), "--date must be YYYY-MM-DD"),
    ((DAY, WH, 0, 0, 7), "--invoices must be at least 1"),
    ((DAY, WH, 10, -1, 7), "--mismatches cannot be negative"),
    ((DAY, WH, 2, 50, 7), "--mismatches 50 is more than the"),
])
def test_a_night_that_cannot_be_planned_says_why_in_one_line(args: tuple, reason: str) -> None:
    with pytest.raises(SeedError, match=reason) as caught:
        plan_night(*args)
    assert "\n" not in str(caught.value)
