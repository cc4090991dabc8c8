"""The gate's rule (recon/domain/gate_policy.py): size is the sum of absolute adjustments."""

from __future__ import annotations

from dataclasses import replace

from recon.domain.gate_policy import GatePolicy, reasons_to_hold
from recon.runtime.config import load_settings
from recon.store.gate import GateFigures

POLICY = GatePolicy.of(load_settings())  # the defaults: 10%, 5%, ₹1 crore, ₹25 lakh
QUIET = GateFigures(invoices=100, parked=0, moved=0, net=0, invoiced=2_00_000_00,
                    largest_supplier=None, largest_supplier_moved=0)


def test_a_quiet_night_passes() -> None:
    assert reasons_to_hold(QUIET, POLICY) == []


def test_offsetting_adjustments_are_weighed_by_what_they_move() -> None:
    """+₹50,000 and −₹50,000 on one invoice: net ₹0, but ₹1,00,000 moves (half of ₹2 lakh)."""
    night = replace(QUIET, moved=1_00_000_00, net=0, largest_supplier="S001",
                    largest_supplier_moved=1_00_000_00)
    reasons = reasons_to_hold(night, POLICY)
    assert len(reasons) == 1
    assert "move ₹1,00,000 (net ₹0), 50.0% of the ₹2,00,000 invoiced, above the 5%" in reasons[0]


def test_the_absolute_caps_hold_a_night_the_share_would_let_through() -> None:
    """A hostile invoice that inflates the invoiced value cannot widen the gate: caps stay."""
    big = replace(QUIET, invoiced=10**15, moved=2_00_00_000_00, net=2_00_00_000_00,
                  largest_supplier="S007", largest_supplier_moved=30_00_000_00)
    reasons = reasons_to_hold(big, POLICY)
    assert any("above the ₹1,00,00,000 threshold for a night" in r for r in reasons)
    assert any("for S007 move ₹30,00,000, above the ₹25,00,000 threshold for one supplier" in r
               for r in reasons)


def test_exact_at_the_limits() -> None:
    at = replace(QUIET, moved=10_000_00, net=10_000_00, invoiced=2_00_000_00)  # exactly 5%
    assert reasons_to_hold(at, POLICY) == []
    assert reasons_to_hold(replace(at, moved=10_000_01), POLICY)
    assert reasons_to_hold(replace(QUIET, parked=10), POLICY) == []  # exactly 10%
    assert reasons_to_hold(replace(QUIET, parked=11), POLICY)


def test_each_currency_is_weighed_against_its_own_invoiced_total() -> None:
    """€8.00 moved on €108.00 invoiced is 7.4 % of the EUR night, whatever the ₹ night holds; the
    ₹ caps weigh ₹ alone (no rate is assumed): 2·10⁹ cents moved within their share pass them."""
    from recon.store.gate import CurrencyFigures

    rupees = CurrencyFigures("INR", 200_00, 200_00, 1_200_00, "A", 200_00)
    euros = CurrencyFigures("EUR", 8_00, 8_00, 108_00, "B", 8_00)
    night = replace(QUIET, invoices=2, moved=200_00, net=200_00, invoiced=1_200_00,
                    by_currency=(rupees, euros))
    assert reasons_to_hold(night, POLICY) == [
        "adjustments move ₹200, 16.7% of the ₹1,200 invoiced, above the 5% threshold",
        "EUR adjustments move €8.00, 7.4% of the €108.00 invoiced, above the 5% threshold",
    ]
    within = replace(night, by_currency=(
        replace(rupees, moved=0, net=0, largest_supplier_moved=0),
        CurrencyFigures("EUR", 2 * 10**9, 2 * 10**9, 10**11, "B", 2 * 10**9)))
    assert reasons_to_hold(within, POLICY) == [], "a ₹ cap never weighs cents"
