"""A seeded month states each night's claims, held lines, duplicates and booked stock in advance.
Here those statements are checked against the cumulative three-way match evaluated afresh over
the rows the month writes (read back from its documents, as the run reads them), so a story
whose stated fate disagrees with the rules fails here, before any stack runs."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, timedelta

import pytest

from recon.documents.extraction.offline import parse_document
from recon.domain.keys import invoice_ref
from recon.tools.seed import night_chunks, story_chunk
from recon.tools.seed_months import (
    MAX_NIGHTS,
    SeedError,
    month_result,
    plan_month,
    short_lines,
)

DAY, WH = "2026-10-13", "ldh"


def month_rows(plan) -> dict[str, list]:
    """Every row the month writes; states the plan's expectations from them (as the seed does)."""
    rows: dict[str, list] = {"invoices": [], "purchase_orders": [], "po_lines": [],
                             "goods_receipts": []}
    for night in plan.regular:
        for chunk in night_chunks(night):
            for name, found in rows.items():
                found.extend(getattr(chunk, name))
    chunk = story_chunk(plan)
    for name, found in rows.items():
        found.extend(getattr(chunk, name))
    short = short_lines(plan)
    month_result(plan, {(po, sku): qty for po, sku, _d, qty, _p in rows["po_lines"]
                        if (po, sku) in short})
    return rows


@dataclass
class Line:
    invoice_no: str
    supplier_id: str
    billed_on: date
    line_no: int
    po_line: tuple[str, str]
    qty: int
    price: int


def evaluate(rows: dict[str, list], dates: list[str], grace: int) -> list[dict]:
    """The rules of docs/design.md "Cumulative three-way match", night by night."""
    ordered = {(po, sku): (qty, price) for po, sku, _d, qty, price in rows["po_lines"]}
    receipts = defaultdict(list)
    for po, sku, _wh, qty, on in rows["goods_receipts"]:
        receipts[(po, sku)].append((on, qty))
    bills: dict[date, list[tuple]] = defaultdict(list)
    for number, supplier, on, _wh, text in rows["invoices"]:
        try:
            doc = parse_document(text)
        except Exception:
            continue  # unreadable: parked at extraction
        bills[on].append((supplier, invoice_ref(supplier, number), doc))  # as the run names it
    accepted_before: Counter = Counter()
    held: list[Line] = []
    seen: dict[str, list[tuple[str, Counter]]] = defaultdict(list)
    nights = []
    for day in map(date.fromisoformat, dates):
        out = {"claims": set(), "held": set(), "duplicates": set(), "stock": Counter()}
        todays = sorted(bills[day], key=lambda b: (b[0], b[1]))
        lines = list(held)
        for supplier, number, doc in todays:
            content = Counter((doc.po_number, ln.sku, ln.quantity, ln.unit_price_paise)
                              for ln in doc.lines)
            for other, earlier in seen[supplier]:
                if other != number and earlier == content:
                    out["duplicates"].add((number, supplier, other))
                    break
            seen[supplier].append((number, content))
            for ln in doc.lines:
                if (doc.po_number, ln.sku) in ordered:  # else parked: no PO or not on it
                    lines.append(Line(number, supplier, day, ln.line_no, (doc.po_number, ln.sku),
                                      ln.quantity, ln.unit_price_paise))
        lines.sort(key=lambda x: (x.billed_on, x.supplier_id, x.invoice_no, x.line_no))
        cum: Counter = Counter()
        accepted_now: Counter = Counter()
        held = []
        for x in lines:
            qty_ordered, po_price = ordered[x.po_line]
            received = sum(q for on, q in receipts[x.po_line] if on <= day)
            prior, before = accepted_before[x.po_line], cum[x.po_line]
            cum[x.po_line] += x.qty
            take = min(x.qty, max(received - prior - before, 0))
            beyond = x.qty - min(x.qty, max(qty_ordered - prior - before, 0))
            shortfall = x.qty - take
            if shortfall and shortfall - beyond > 0 and day < x.billed_on + timedelta(days=grace):
                held.append(x)
                out["held"].add((x.invoice_no, x.supplier_id, x.line_no))
                continue
            if shortfall:
                out["claims"].add((x.invoice_no, x.line_no, "qty", x.supplier_id, shortfall * x.price))
            if x.price != po_price and take:
                out["claims"].add((x.invoice_no, x.line_no, "price", x.supplier_id,
                                   (x.price - po_price) * take))
            accepted_now[x.po_line] += take
            if take:
                out["stock"][x.po_line[1]] += take
        accepted_before.update(accepted_now)
        nights.append(out)
    return nights


def stated(plan) -> list[dict]:
    return [{
        "claims": {(a.invoice_no, a.line_no, a.kind, a.supplier_id, a.amount_paise)
                   for a in n.claims},
        "held": {(h.invoice_no, h.supplier_id, h.line_no) for h in n.held},
        "duplicates": {(d.invoice_no, d.supplier_id, d.of_invoice_no) for d in n.duplicates},
        "stock": Counter({sku: units for sku, units in n.stock.items() if units}),
    } for n in plan.result.nights]


@pytest.mark.parametrize(("nights", "invoices", "mismatches", "grace", "seed"), [
    (5, 40, 8, 3, 7), (3, 25, 4, 3, 11), (4, 30, 6, 0, 2), (4, 30, 6, 1, 3), (6, 20, 4, 2, 5),
])
def test_every_stated_fate_is_what_the_rules_give(nights, invoices, mismatches, grace, seed) -> None:
    plan = plan_month(DAY, WH, nights, invoices, mismatches, seed, grace)
    rows = month_rows(plan)
    assert stated(plan) == evaluate(rows, plan.dates, grace)


def test_the_month_tells_every_story() -> None:
    plan = plan_month(DAY, WH, 5, 40, 8, 7)
    month_rows(plan)
    nights = plan.result.nights
    numbers = Counter(i.invoice_no for i in plan.invoices)
    shared = [n for n, c in numbers.items() if c == 2]
    assert len(shared) == 5, "one number sent by two suppliers each night"
    assert all(len({i.supplier[0] for i in plan.invoices if i.invoice_no == n}) == 2 for n in shared)
    # The re-bill: night 1 claims both lines of the second bill and flags it.
    [dup] = nights[1].duplicates
    assert {(a.invoice_no, a.kind) for a in nights[1].claims} >= {(dup.invoice_no, "qty")}
    assert not nights[0].duplicates and all(not n.duplicates for n in nights[2:])
    # Goods that never come: billed on night 0, held on nights 0-2, claimed on night 3.
    never = [i for i in plan.invoices if i.night == 0 and not any(
        r.po_number == i.po_number for r in plan.receipts)]
    assert len(never) == 1
    never_ref = invoice_ref(never[0].supplier[0], never[0].invoice_no)
    held_on = [k for k, n in enumerate(nights)
               if any(h.invoice_no == never_ref for h in n.held)]
    assert held_on == [0, 1, 2]
    assert any(a.invoice_no == never_ref for a in nights[3].claims)
    # Receipts are dated on their nights; some arrive the night after the bill.
    assert {r.night for r in plan.receipts} == set(range(5))
    # A single night's short delivery is claimed the night it is billed when the missing units
    # are beyond its order, else held and claimed three nights later; never both, never neither.
    for k, night in enumerate(plan.regular):
        for a in (a for a in night.result.adjustments if a.kind == "qty"):
            line = (a.invoice_no, a.line_no)
            now = line in {(c.invoice_no, c.line_no) for c in nights[k].claims}
            held = line in {(h.invoice_no, h.line_no) for h in nights[k].held}
            assert now != held, line
            if held and k + 3 < 5:
                assert line in {(c.invoice_no, c.line_no) for c in nights[k + 3].claims}


def test_the_same_arguments_plan_the_same_month() -> None:
    first, again = plan_month(DAY, WH, 4, 30, 5, 7), plan_month(DAY, WH, 4, 30, 5, 7)
    assert month_rows(first) == month_rows(again)
    assert first.result is not None
    assert first.result == again.result
    assert month_rows(plan_month(DAY, WH, 4, 30, 5, 8)) != month_rows(first)


def test_each_night_of_the_month_is_the_single_night_of_its_date() -> None:
    from recon.tools.seed import plan_night

    plan = plan_month(DAY, WH, 3, 30, 5, 7)
    for day, night in zip(plan.dates, plan.regular, strict=True):
        alone = plan_night(day, WH, 30, 5, 7)
        assert list(night_chunks(night)) == list(night_chunks(alone))
    assert plan.dates == ["2026-10-13", "2026-10-14", "2026-10-15"]


def test_without_shared_numbers_or_rebill_those_stories_are_left_out() -> None:
    plan = plan_month(DAY, WH, 3, 20, 2, 7, shared_numbers=False, rebill=False)
    assert len({i.invoice_no for i in plan.invoices}) == len(plan.invoices)
    rows = month_rows(plan)
    assert not any(n.duplicates for n in plan.result.nights)
    assert stated(plan) == evaluate(rows, plan.dates, 3)


@pytest.mark.parametrize(("args", "reason"), [
    (dict(nights=0), "--nights must be 1 to 366, got 0"),
    (dict(nights=MAX_NIGHTS + 1), "--nights must be 1 to 366"),
    (dict(nights=11, invoices=100_000), "at most 1,000,000 are seeded in one go"),
    (dict(grace_days=-1), "grace window cannot be negative"),
    (dict(first_date="2026-02-30"), "--date must be YYYY-MM-DD"),
    (dict(first_date="9999-12-30", nights=3), "runs past the calendar"),
    (dict(invoices=2, mismatches=50), "--mismatches 50 is more than the"),
])
def test_a_month_that_cannot_be_planned_says_why_in_one_line(args: dict, reason: str) -> None:
    call = dict(first_date=DAY, warehouse=WH, nights=3, invoices=20, mismatches=2, seed=7) | args
    with pytest.raises(SeedError, match=reason) as caught:
        plan_month(**call)
    assert "\n" not in str(caught.value)
