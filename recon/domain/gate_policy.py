"""The gate before debit notes, as a rule: what the figures must not cross before notes that
cannot be unsent go out. The limits are the worker's configuration (`RECON_GATE_*`), never the
run's input: whoever can start a run cannot widen its gate (docs/design.md §11).

Each currency is weighed against its own invoiced total, in its own minor unit: a EUR supplier's
adjustments against the night's EUR invoices, never as rupees and never converted. The ₹
thresholds (`RECON_GATE_MAX_TOTAL_PAISE`, `..._SUPPLIER_PAISE`) are amounts in ₹ and weigh ₹
adjustments only; another currency is weighed by its share (no rate is assumed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from recon.domain.money import BASE_CURRENCY, amount


class Sizes(Protocol):
    """One currency's sizes, in its minor unit."""

    currency: str
    moved: int
    net: int
    invoiced: int
    largest_supplier: str | None
    largest_supplier_moved: int


class Figures(Protocol):
    invoices: int
    parked: int
    moved: int
    net: int
    invoiced: int
    largest_supplier: str | None
    largest_supplier_moved: int
    duplicates: tuple[tuple[str, str, str], ...]
    by_currency: tuple[Sizes, ...]  # empty: a night in ₹ alone (the fields above)


@dataclass(frozen=True)
class GatePolicy:
    max_parked_ratio: float  # share of whole invoices parked
    max_adjustment_share: float  # sum of |adjustments| against the night's invoiced value
    max_total_paise: int  # sum of |adjustments| of the night
    max_supplier_paise: int  # sum of |adjustments| of any one supplier

    @classmethod
    def of(cls, settings) -> GatePolicy:  # recon.config.Settings
        return cls(settings.gate_max_parked_ratio, settings.gate_max_adjustment_share,
                   settings.gate_max_total_paise, settings.gate_max_supplier_paise)


def reasons_to_hold(f: Figures, policy: GatePolicy) -> list[str]:
    """Every limit the night crosses, in words for the handover note; empty: the evidence is
    clear. Compared as integers (the share as paise * 1,000,000 against a whole multiple), so a
    night of any size is weighed exactly."""
    reasons = []
    if f.invoices and f.parked > policy.max_parked_ratio * f.invoices:
        reasons.append(f"{f.parked} of {f.invoices} invoices parked, above the "
                       f"{policy.max_parked_ratio:.0%} threshold")
    for sizes in f.by_currency or (f,):
        reasons += _size_reasons(sizes, getattr(sizes, "currency", BASE_CURRENCY), policy)
    # Whatever the quantities say: a bill repeating an earlier one is for a person to judge.
    for invoice, earlier, night in f.duplicates:
        reasons.append(f"{invoice} is a possible duplicate of {earlier} (night of {night}): the "
                       "same PO lines, quantities and prices under another number")
    return reasons


def _size_reasons(f: Sizes | Figures, currency: str, policy: GatePolicy) -> list[str]:
    """The limits one currency's adjustments cross, each in that currency ("EUR adjustments move
    €78.33, 12.2% of the €640.00 invoiced"). The share weighs every currency against its own
    invoiced total; the ₹ thresholds weigh ₹ alone."""
    reasons = []
    rupees = currency == BASE_CURRENCY
    what = "adjustments" if rupees else f"{currency} adjustments"
    net = f" (net {amount(f.net, currency)})" if f.net != f.moved else ""
    if f.moved and f.moved * 1_000_000 > round(policy.max_adjustment_share * 1_000_000) * max(
            f.invoiced, 0):
        share = f"{f.moved / f.invoiced:.1%} of" if f.invoiced else "against"
        reasons.append(f"{what} move {amount(f.moved, currency)}{net}, {share} the "
                       f"{amount(f.invoiced, currency)} invoiced, above the "
                       f"{policy.max_adjustment_share:.0%} threshold")
    if rupees and f.moved > policy.max_total_paise:
        reasons.append(f"adjustments move {amount(f.moved, currency)}{net}, above the "
                       f"{amount(policy.max_total_paise)} threshold for a night")
    if rupees and f.largest_supplier_moved > policy.max_supplier_paise:
        reasons.append(f"adjustments for {f.largest_supplier} move "
                       f"{amount(f.largest_supplier_moved)}, above the "
                       f"{amount(policy.max_supplier_paise)} threshold for one supplier")
    return reasons
