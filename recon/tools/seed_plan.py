"""The seeded night, decided before anything is written: which supplier sends which invoice in
which layout, which lines arrive short or are billed over the purchase order, which invoices are
unreadable or cite no PO.

The same (date, warehouse, invoices, mismatches, seed) always makes the same plan, so a test or a
demo can state in advance exactly which adjustments the run must post. `recon.tools.seed`
turns a plan into rows and writes them.
"""

from __future__ import annotations

import random
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from recon.documents.layouts import LAYOUTS
from recon.domain.keys import invoice_ref, number_of

_NAMES = [
    "Sharma Foods", "Gupta Traders", "Annapurna Mills", "Kaveri Agro", "Punjab Dairy",
    "Malabar Spices", "Deccan Pulses", "Himalaya Grains", "Ganga Oils", "Konkan Cashews",
    "Narmada Sugar", "Thar Salt Works", "Nilgiri Teas", "Satpura Foods", "Vindhya Flour",
    "Godavari Rice", "Brahmaputra Jute", "Aravalli Packaging", "Sahyadri Fruits", "Kutch Dates",
    "Chambal Mustard", "Yamuna Snacks", "Tapti Beverages", "Mahanadi Fisheries",
]
_GOODS = [
    "Basmati rice 5kg", "Sona masoori rice 10kg", "Atta 10kg", "Toor dal 1kg", "Moong dal 1kg",
    "Chana dal 1kg", "Mustard oil 1L", "Sunflower oil 5L", "Ghee 1L", "Sugar 5kg", "Salt 1kg",
    "Tea 500g", "Coffee 200g", "Turmeric 200g", "Chilli powder 200g", "Cumin 100g",
    "Cashews 500g", "Almonds 500g", "Dates 1kg", "Poha 1kg", "Besan 1kg", "Jaggery 1kg",
    "Biscuits carton", "Noodles carton", "Soap carton", "Detergent 4kg", "Matchboxes pack",
    "Candles pack", "Papad 200g", "Pickle 500g",
]


@dataclass(frozen=True, slots=True)
class ExpectedAdjustment:
    invoice_no: str  # as the run names it: the reference `S001:INV-…` (keys.invoice_ref)
    line_no: int
    kind: str
    supplier_id: str
    amount_paise: int

    @property
    def number(self) -> str:
        """The supplier's own number, as its document and the `invoices` table carry it."""
        return number_of(self.invoice_no, self.supplier_id)


@dataclass
class SeedResult:
    """What the seed planted, every invoice named as the run names it: by its reference
    (`S001:INV-20261013-LDH-00001`); the documents carry the number after the colon."""

    business_date: str
    warehouse: str
    invoices: int
    unreadable: list[str] = field(default_factory=list)
    unknown_sku_lines: list[tuple[str, int]] = field(default_factory=list)
    no_po_invoices: list[str] = field(default_factory=list)
    adjustments: list[ExpectedAdjustment] = field(default_factory=list)


from recon.domain.errors import SeedError  # noqa: E402 - defined with every error class


def compact_date(business_date: str) -> str:
    return business_date.replace("-", "")


MAX_LINES = 4  # lines per invoice the seed draws (an unknown-SKU line may be added on top)


@dataclass
class NightPlan:
    """Everything the night's random draws decided, kept compact (a few bytes per invoice) so any
    allowed size plans in bounded memory. Documents and rows are produced from it in chunks."""

    business_date: str
    warehouse: str
    invoices: int
    rng: random.Random  # continues where planning stopped: rendering and stock draw from it
    suppliers: list[tuple[str, str, str]]
    catalog: list[tuple[str, str, int]]
    supplier_of: array  # per invoice: index into suppliers
    layout_of: array  # per invoice: index into LAYOUTS
    lines_of: array  # per invoice: how many lines
    goods: array  # MAX_LINES per invoice: index into catalog
    qty: array  # MAX_LINES per invoice: quantity ordered (and invoiced)
    unreadable: set[int]
    no_po: set[int]
    unknown_targets: set[int]
    # keyed by invoice * MAX_LINES + line:
    received: dict[int, int]  # short deliveries only; other clean lines arrive in full
    invoiced_price: dict[int, int]  # price over the PO, for the lines that have one
    result: SeedResult


class _FlatLines(Sequence):
    """The (invoice, line) pairs of the readable invoices, in order, without a list of them (the
    seed used to build that list: ~2.5 pairs per invoice). Position k is the list's k-th pair."""

    def __init__(self, invoice_of: array, first_line: array, total: int) -> None:
        self._invoice_of, self._first, self._total = invoice_of, first_line, total

    def __len__(self) -> int:
        return self._total

    def __getitem__(self, k):  # type: ignore[override]
        if not 0 <= k < self._total:
            raise IndexError(k)
        pos = bisect_right(self._first, k) - 1
        return self._invoice_of[pos], k - self._first[pos]


def plan_night(
    business_date: str, warehouse: str, invoices: int, mismatches: int, seed: int
) -> NightPlan:
    """Decide the night first (all-or-nothing errors before anything is written). The draws are
    made in exactly the order they always were, so a (date, warehouse, invoices, mismatches, seed)
    keeps writing the same night it wrote before streaming."""
    try:
        date.fromisoformat(business_date)
    except ValueError:
        raise SeedError(f"--date must be YYYY-MM-DD, got {business_date!r}") from None
    if invoices < 1:
        raise SeedError("--invoices must be at least 1")
    if mismatches < 0:
        raise SeedError("--mismatches cannot be negative")
    rng = random.Random(f"{seed}:{business_date}:{warehouse}")
    suppliers = [
        (f"S{n:03d}", f"{name} Pvt Ltd", f"accounts@{name.lower().replace(' ', '-')}.example")
        for n, name in enumerate(_NAMES, 1)
    ]
    catalog = [
        (f"SKU-{1000 + n}", desc, rng.randrange(2_000, 250_000, 50)) for n, desc in enumerate(_GOODS)
    ]
    result = SeedResult(business_date, warehouse, invoices)
    n_unreadable = max(1, invoices // 100) if invoices >= 20 else 0
    n_no_po = max(1, invoices // 150) if invoices >= 20 else 0
    special = rng.sample(range(invoices), n_unreadable + n_no_po)
    unreadable, no_po = set(special[:n_unreadable]), set(special[n_unreadable:])

    supplier_of, layout_of, lines_of = array("B"), array("B"), array("B")
    goods, qty = array("B"), array("B")
    clean_invoice, first_line, clean_total = array("I"), array("Q"), 0
    pad = [0] * MAX_LINES
    for i in range(invoices):
        # rng.choice / rng.sample over index ranges make the same draws as over the lists.
        supplier_of.append(rng.choice(range(len(suppliers))))
        picked = rng.sample(range(len(catalog)), rng.randint(1, MAX_LINES))
        quantities = [rng.randint(5, 200) for _ in picked]
        layout_of.append(rng.choice(range(len(LAYOUTS))))
        lines_of.append(len(picked))
        goods.extend(picked + pad[len(picked):])
        qty.extend(quantities + pad[len(picked):])
        if i not in unreadable and i not in no_po:
            clean_invoice.append(i)
            first_line.append(clean_total)
            clean_total += len(picked)

    if mismatches > clean_total:
        raise SeedError(
            f"--mismatches {mismatches} is more than the {clean_total} readable lines "
            f"of {invoices} invoices"
        )
    day, wh = compact_date(business_date), warehouse.upper()
    received: dict[int, int] = {}
    invoiced_price: dict[int, int] = {}
    clean_lines = _FlatLines(clean_invoice, first_line, clean_total)
    # Sampling positions draws what sampling the pairs drew; sorted positions are sorted pairs.
    for k, flat in enumerate(sorted(rng.sample(range(len(clean_lines)), mismatches))):
        i, j = clean_lines[flat]
        invoice_no = f"INV-{day}-{wh}-{i + 1:05d}"
        supplier_id = suppliers[supplier_of[i]][0]
        ordered, price = qty[i * MAX_LINES + j], catalog[goods[i * MAX_LINES + j]][2]
        if k % 2 == 0 and ordered > 1:  # short delivery: billed for more than arrived
            short = rng.randint(1, min(ordered - 1, 12))
            received[i * MAX_LINES + j] = ordered - short
            amount, kind = short * price, "qty"
        else:  # price over the purchase order
            bump = rng.randrange(50, max(100, price // 10), 50)
            invoiced_price[i * MAX_LINES + j] = price + bump
            amount, kind = bump * ordered, "price"
        result.adjustments.append(ExpectedAdjustment(invoice_ref(supplier_id, invoice_no), j + 1,
                                                     kind, supplier_id, amount))

    n_unknown = invoices // 80
    # The readable invoices, ascending: the population the seed always sampled these from.
    unknown_targets = set(rng.sample(clean_invoice, min(n_unknown, invoices)))
    return NightPlan(
        business_date, warehouse, invoices, rng, suppliers, catalog, supplier_of, layout_of,
        lines_of, goods, qty, unreadable, no_po, unknown_targets, received, invoiced_price, result,
    )
