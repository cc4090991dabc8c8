"""A seeded month: consecutive nights whose purchase orders span nights, with every night's claims
stated before anything is written.

Night k (business date `first + k` days) is exactly the single night `recon seed` writes for that
date (its own orders, receipts and invoices, drawn from the same seed), plus a few *stories* that
cross nights, drawn from a generator of their own so the single nights stay as they are:

- split: one PO billed by two invoices the same night, all received: clean;
- never: a bill whose goods never come: held awaiting receipt, claimed as a qty mismatch (the
  whole quantity) on the night its grace window closes;
- shared: two suppliers send the same invoice number the same night, each for its own PO: both
  clean (only where the database keys invoices by supplier and number);
- partial (two nights): a PO line received and billed in two halves of different sizes over two
  nights: clean each night;
- ahead (two nights): billed on night k, its receipt dated night k+1: held, then clean;
- rebill (nights 0 and 1, once): a fully received and billed PO billed again under a new number:
  a qty mismatch beyond the order on every line, and a possible duplicate of the first bill.

The expectations follow the cumulative three-way match (docs/design.md, "Seeded months"): a line
short of its receipts but within the order is held until `grace_days` after its invoice date and
then claimed by that night (0: claimed at once), so the single nights' short deliveries are
claimed `grace_days` nights after they are billed. `recon.tools.seed.seed_month` renders and
writes the plan.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta

from recon.domain.keys import invoice_ref
from recon.domain.settings_table import default_of
from recon.tools.seed_plan import (
    MAX_LINES,
    ExpectedAdjustment,
    NightPlan,
    SeedError,
    SeedResult,
    compact_date,
    plan_night,
)

MAX_NIGHTS = 366  # a year of nights
MAX_MONTH_INVOICES = 1_000_000  # regular invoices over all nights: one transaction writes them
DEFAULT_GRACE_DAYS: int = default_of("RECON_RECEIPT_GRACE_DAYS")  # the worker's, when unset


@dataclass(frozen=True, slots=True)
class HeldLine:
    """A line awaiting receipt at the end of a night: nothing accepted, nothing claimed yet."""

    invoice_no: str
    supplier_id: str
    line_no: int
    billed_on: str


@dataclass(frozen=True, slots=True)
class PossibleDuplicate:
    invoice_no: str
    supplier_id: str
    of_invoice_no: str  # the earlier bill of the same supplier with the same lines


@dataclass
class NightExpectation:
    """What one night of the month must do, known before it runs."""

    business_date: str
    invoices: int  # in the night's inbox: the single night's plus the stories'
    seeded: SeedResult  # the single night's own lists (unreadable, citing no PO, unknown SKUs)
    claims: list[ExpectedAdjustment] = field(default_factory=list)  # posted by this night
    held: list[HeldLine] = field(default_factory=list)  # awaiting receipt when the night ends
    duplicates: list[PossibleDuplicate] = field(default_factory=list)
    stock: dict[str, int] = field(default_factory=dict)  # units booked per SKU (accepted qty)


@dataclass
class MonthResult:
    warehouse: str
    nights: list[NightExpectation]

    @property
    def invoices(self) -> int:
        return sum(n.invoices for n in self.nights)


@dataclass(frozen=True, slots=True)
class StoryOrder:
    po_number: str
    supplier_id: str
    night: int  # ordered on this night's date
    lines: tuple[tuple[str, str, int, int], ...]  # (sku, description, qty ordered, unit price)


@dataclass(frozen=True, slots=True)
class StoryReceipt:
    po_number: str
    sku: str
    qty: int
    night: int  # received_on is this night's date


@dataclass(frozen=True, slots=True)
class StoryInvoice:
    invoice_no: str
    supplier: tuple[str, str, str]  # (supplier_id, name, email)
    night: int  # billed on this night (its business date)
    po_number: str
    lines: tuple[tuple[str, str, int, int], ...]  # (sku, description, qty billed, unit price)


@dataclass(frozen=True, slots=True)
class _Fate:
    """How one billed line ends: decided on night `decided` (None: after the month), accepting
    `accepted` units, with a qty claim of `claim` paise (0: none)."""

    invoice_no: str
    supplier_id: str
    line_no: int
    sku: str
    billed: int
    decided: int | None
    accepted: int
    claim: int = 0
    kind: str = "qty"


@dataclass
class MonthPlan:
    first_date: str
    warehouse: str
    nights: int
    grace_days: int
    dates: list[str]
    regular: list[NightPlan]
    orders: list[StoryOrder] = field(default_factory=list)
    receipts: list[StoryReceipt] = field(default_factory=list)
    invoices: list[StoryInvoice] = field(default_factory=list)
    fates: list[_Fate] = field(default_factory=list)  # the stories' lines
    duplicates: list[tuple[int, PossibleDuplicate]] = field(default_factory=list)  # (night, ...)
    result: MonthResult | None = None  # set by month_result


def grace_days_of(settings: object) -> int:
    """The receipt grace window the worker applies (RECON_RECEIPT_GRACE_DAYS), so the month's
    expectations are those its nights will meet; the default where the setting is not known."""
    return int(getattr(settings, "receipt_grace_days", DEFAULT_GRACE_DAYS))


def business_dates(first_date: str, nights: int) -> list[str]:
    """One night per calendar day: recon's business dates have no weekends."""
    first = date.fromisoformat(first_date)
    return [(first + timedelta(days=k)).isoformat() for k in range(nights)]


def check_month(first_date: str, nights: int, invoices: int, grace_days: int) -> None:
    """The month's own bounds (each night's are plan_night's), all before anything is drawn."""
    try:
        date.fromisoformat(first_date)
    except ValueError:
        raise SeedError(f"--date must be YYYY-MM-DD, got {first_date!r}") from None
    if not 1 <= nights <= MAX_NIGHTS:
        raise SeedError(f"--nights must be 1 to {MAX_NIGHTS}, got {nights}")
    if invoices * nights > MAX_MONTH_INVOICES:
        raise SeedError(f"--nights {nights} of --invoices {invoices} is {invoices * nights:,} "
                        f"invoices; at most {MAX_MONTH_INVOICES:,} are seeded in one go")
    if grace_days < 0:
        raise SeedError(f"the receipt grace window cannot be negative, got {grace_days}")
    if (date.max - date.fromisoformat(first_date)).days < nights:
        raise SeedError(f"--nights {nights} from {first_date} runs past the calendar")


def plan_month(first_date: str, warehouse: str, nights: int, invoices: int, mismatches: int,
               seed: int, grace_days: int = DEFAULT_GRACE_DAYS, shared_numbers: bool = True,
               rebill: bool = True) -> MonthPlan:
    """Decide the whole month first (all-or-nothing errors before anything is written). The
    stories' fates are stated here; the single nights' are stated by `month_result`, once their
    rows say what each short line's order was."""
    check_month(first_date, nights, invoices, grace_days)
    dates = business_dates(first_date, nights)
    regular = [plan_night(day, warehouse, invoices, mismatches, seed) for day in dates]
    plan = MonthPlan(first_date, warehouse, nights, grace_days, dates, regular)
    _Stories(plan, random.Random(f"{seed}:{first_date}:{warehouse}:months"), shared_numbers,
             rebill).draw()
    return plan


def short_lines(plan: MonthPlan) -> set[tuple[str, str]]:
    """(po_number, sku) of every short delivery of the single nights: the PO lines whose ordered
    quantity `month_result` needs from the rows written."""
    found = set()
    for night in plan.regular:
        day, wh = compact_date(night.business_date), night.warehouse.upper()
        for key in night.received:
            found.add((f"PO-{wh}-{day}-{key // MAX_LINES + 1:05d}",
                       night.catalog[night.goods[key]][0]))
    return found


def month_result(plan: MonthPlan, ordered: dict[tuple[str, str], int]) -> MonthResult:
    """Every night's expectations, from the stories' fates and the single nights' planted
    mismatches; `ordered`: the PO quantity written for each of `short_lines(plan)`."""
    fates = list(plan.fates)
    for night in plan.regular:
        fates.extend(_regular_fates(night, plan.dates, plan.grace_days, ordered))
    plan.result = _expectations(plan, fates)
    return plan.result


def _regular_fates(night: NightPlan, dates: list[str], grace: int,
                   ordered: dict[tuple[str, str], int]) -> list[_Fate]:
    """The single night's planted mismatches, told by the cumulative match. A price line is
    claimed that night. A short line (billed more than arrived) is claimed that night when the
    units missing are beyond its order (the order closed at what arrived), and held whole until
    its window closes when they are within it (goods still to come); either way it accepts
    what arrived. Clean lines are booked that night (`_regular_stock`)."""
    k = dates.index(night.business_date)
    day, wh = compact_date(night.business_date), night.warehouse.upper()
    fates = []
    for adj in night.result.adjustments:
        i, j = int(adj.invoice_no.rsplit("-", 1)[1]) - 1, adj.line_no - 1
        key = i * MAX_LINES + j
        sku, billed = night.catalog[night.goods[key]][0], night.qty[key]
        invoice_no = f"INV-{day}-{wh}-{i + 1:05d}"
        if adj.kind == "price":
            fates.append(_Fate(invoice_no, adj.supplier_id, adj.line_no, sku, billed, k, billed,
                               adj.amount_paise, "price"))
            continue
        received = night.received[key]
        on_order = ordered[(f"PO-{wh}-{day}-{i + 1:05d}", sku)]
        in_transit = (billed - received) - (billed - min(billed, on_order))
        decided = _closes(k, grace, len(dates)) if in_transit > 0 else k
        fates.append(_Fate(invoice_no, adj.supplier_id, adj.line_no, sku, billed, decided,
                           received, adj.amount_paise))
    return fates


def _closes(billed: int, grace: int, nights: int) -> int | None:
    """The night a line short of its receipts is claimed on: its window closes `grace` days after
    its invoice date (None: after the last night of the month)."""
    return billed + grace if billed + grace < nights else None


def _regular_stock(night: NightPlan) -> dict[str, int]:
    """Units the single night books on its own date: every line of a readable invoice citing its
    PO, except the planted mismatches (each booked with its fate, see `_regular_fates`)."""
    stock: dict[str, int] = {}
    skip = night.unreadable | night.no_po
    for i in range(night.invoices):
        if i in skip:
            continue
        for j in range(night.lines_of[i]):
            key = i * MAX_LINES + j
            if key in night.received or key in night.invoiced_price:
                continue
            sku = night.catalog[night.goods[key]][0]
            stock[sku] = stock.get(sku, 0) + night.qty[key]
    return stock


class _Stories:
    """The cross-night stories, each told with its fate stated as it is drawn."""

    def __init__(self, plan: MonthPlan, rng: random.Random, shared_numbers: bool,
                 rebill: bool) -> None:
        self.plan, self.rng = plan, rng
        self.fates, self.duplicates = plan.fates, plan.duplicates
        self.shared_numbers, self.rebill = shared_numbers, rebill
        self.catalog = plan.regular[0].catalog
        self.suppliers = plan.regular[0].suppliers
        self.serial = 0

    def draw(self) -> None:
        nights = self.plan.nights
        for k in range(nights):
            self._split(k)
            self._never(k)
            if self.shared_numbers:
                self._shared(k)
            if k + 1 < nights:
                self._partial(k)
                self._ahead(k)
                if k == 0 and self.rebill:
                    self._rebill(k)

    # ------------------------------------------------------------------ drawing helpers
    def _number(self, night: int, kind: str) -> str:
        self.serial += 1
        day, wh = compact_date(self.plan.dates[night]), self.plan.warehouse.upper()
        return (f"PO-{wh}-{day}-M{self.serial:03d}" if kind == "po"
                else f"INV-{day}-{wh}-M{self.serial:03d}")

    def _goods(self, n: int) -> list[tuple[str, str, int]]:
        """n distinct SKUs with a PO price of the story's own."""
        picked = self.rng.sample(range(len(self.catalog)), n)
        return [(self.catalog[g][0], self.catalog[g][1], self.rng.randrange(2_000, 150_000, 50))
                for g in picked]

    def _order(self, night: int, supplier: tuple[str, str, str],
               lines: list[tuple[str, str, int, int]]) -> str:
        po = self._number(night, "po")
        self.plan.orders.append(StoryOrder(po, supplier[0], night, tuple(lines)))
        return po

    def _bill(self, night: int, supplier: tuple[str, str, str], po: str,
              lines: list[tuple[str, str, int, int]], number: str | None = None) -> str:
        invoice_no = number or self._number(night, "inv")
        self.plan.invoices.append(StoryInvoice(invoice_no, supplier, night, po, tuple(lines)))
        return invoice_no

    def _receive(self, po: str, sku: str, qty: int, night: int) -> None:
        self.plan.receipts.append(StoryReceipt(po, sku, qty, night))

    def _fate(self, invoice_no: str, supplier: tuple[str, str, str], line_no: int, sku: str,
              billed: int, decided: int | None, accepted: int, claim: int = 0) -> None:
        self.fates.append(_Fate(invoice_no, supplier[0], line_no, sku, billed, decided, accepted,
                                claim))

    def _supplier(self) -> tuple[str, str, str]:
        return self.rng.choice(self.suppliers)

    # ------------------------------------------------------------------ the stories
    def _split(self, k: int) -> None:
        supplier = self._supplier()
        (s1, d1, p1), (s2, d2, p2) = self._goods(2)
        a, b = self.rng.randint(5, 40), self.rng.randint(10, 40)
        part = self.rng.randint(1, b - 1)
        po = self._order(k, supplier, [(s1, d1, a, p1), (s2, d2, b, p2)])
        self._receive(po, s1, a, k)
        self._receive(po, s2, b, k)
        first = self._bill(k, supplier, po, [(s1, d1, a, p1), (s2, d2, part, p2)])
        second = self._bill(k, supplier, po, [(s2, d2, b - part, p2)])
        self._fate(first, supplier, 1, s1, a, k, a)
        self._fate(first, supplier, 2, s2, part, k, part)
        self._fate(second, supplier, 1, s2, b - part, k, b - part)

    def _never(self, k: int) -> None:
        supplier = self._supplier()
        [(sku, desc, price)] = self._goods(1)
        qty = self.rng.randint(5, 40)
        po = self._order(k, supplier, [(sku, desc, qty, price)])
        invoice_no = self._bill(k, supplier, po, [(sku, desc, qty, price)])
        closes = _closes(k, self.plan.grace_days, self.plan.nights)
        self._fate(invoice_no, supplier, 1, sku, qty, closes, 0, qty * price)

    def _shared(self, k: int) -> None:
        first, second = self.rng.sample(self.suppliers, 2)
        self.serial += 1
        number = f"INV-{compact_date(self.plan.dates[k])}-{self.plan.warehouse.upper()}-M{self.serial:03d}"
        for supplier in (first, second):
            [(sku, desc, price)] = self._goods(1)
            qty = self.rng.randint(5, 40)
            po = self._order(k, supplier, [(sku, desc, qty, price)])
            self._receive(po, sku, qty, k)
            self._bill(k, supplier, po, [(sku, desc, qty, price)], number=number)
            self._fate(number, supplier, 1, sku, qty, k, qty)

    def _partial(self, k: int) -> None:
        supplier = self._supplier()
        [(sku, desc, price)] = self._goods(1)
        first = self.rng.randint(10, 40)
        second = first + self.rng.randint(1, 20)  # never the same size: that would be a duplicate
        po = self._order(k, supplier, [(sku, desc, first + second, price)])
        for night, qty in ((k, first), (k + 1, second)):
            self._receive(po, sku, qty, night)
            invoice_no = self._bill(night, supplier, po, [(sku, desc, qty, price)])
            self._fate(invoice_no, supplier, 1, sku, qty, night, qty)

    def _ahead(self, k: int) -> None:
        supplier = self._supplier()
        [(sku, desc, price)] = self._goods(1)
        qty = self.rng.randint(5, 40)
        po = self._order(k, supplier, [(sku, desc, qty, price)])
        invoice_no = self._bill(k, supplier, po, [(sku, desc, qty, price)])
        self._receive(po, sku, qty, k + 1)
        if self.plan.grace_days == 0:  # never held: claimed at once, the late goods change nothing
            self._fate(invoice_no, supplier, 1, sku, qty, k, 0, qty * price)
        else:
            self._fate(invoice_no, supplier, 1, sku, qty, k + 1, qty)

    def _rebill(self, k: int) -> None:
        supplier = self._supplier()
        lines = [(sku, desc, self.rng.randint(5, 40), price) for sku, desc, price in self._goods(2)]
        po = self._order(k, supplier, lines)
        for sku, _d, qty, _p in lines:
            self._receive(po, sku, qty, k)
        first = self._bill(k, supplier, po, lines)
        again = self._bill(k + 1, supplier, po, lines)
        for n, (sku, _d, qty, price) in enumerate(lines, 1):
            self._fate(first, supplier, n, sku, qty, k, qty)
            self._fate(again, supplier, n, sku, qty, k + 1, 0, qty * price)  # beyond the order
        self.duplicates.append((k + 1, PossibleDuplicate(
            invoice_ref(supplier[0], again), supplier[0], invoice_ref(supplier[0], first))))


def _expectations(plan: MonthPlan, fates: list[_Fate]) -> MonthResult:
    nights = [NightExpectation(day, plan.regular[k].invoices, plan.regular[k].result,
                               stock=_regular_stock(plan.regular[k]))
              for k, day in enumerate(plan.dates)]
    for story in plan.invoices:
        nights[story.night].invoices += 1
    billed_on = {(s.supplier[0], s.invoice_no): s.night for s in plan.invoices}
    for fate in fates:
        billed = billed_on.get((fate.supplier_id, fate.invoice_no))
        if billed is None:  # a single night's line: its date is in its number
            billed = plan.dates.index(_date_in(fate.invoice_no))
        last = plan.nights if fate.decided is None else fate.decided
        ref = invoice_ref(fate.supplier_id, fate.invoice_no)  # as the run names the invoice
        for k in range(billed, last):
            nights[k].held.append(HeldLine(ref, fate.supplier_id, fate.line_no,
                                           plan.dates[billed]))
        if fate.decided is None:
            continue
        night = nights[fate.decided]
        if fate.accepted:
            night.stock[fate.sku] = night.stock.get(fate.sku, 0) + fate.accepted
        if fate.claim:
            night.claims.append(ExpectedAdjustment(ref, fate.line_no, fate.kind,
                                                   fate.supplier_id, fate.claim))
    for k, duplicate in plan.duplicates:
        nights[k].duplicates.append(duplicate)
    for night in nights:
        night.claims.sort(key=lambda a: (a.invoice_no, a.supplier_id, a.line_no, a.kind))
        night.held.sort(key=lambda h: (h.billed_on, h.supplier_id, h.invoice_no, h.line_no))
    return MonthResult(plan.warehouse, nights)


def _date_in(invoice_no: str) -> str:
    day = invoice_no.split("-")[1]
    return f"{day[:4]}-{day[4:6]}-{day[6:]}"
