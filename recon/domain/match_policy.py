"""The money rules of the cumulative three-way match (docs/design.md §12), as the worker's
policy: how long a bill ahead of its goods is held, and how far an invoice price may stray from
the PO price before it is an adjustment. Pure values; recon/store/weighing.py applies them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MatchPolicy:
    receipt_grace_days: int = 3  # 0: a bill ahead of its goods is claimed at once
    price_tolerance_paise: int = 0  # per unit; 0: no absolute tolerance
    price_tolerance_percent: float = 0.0  # of the PO price; 0: no percentage tolerance

    @classmethod
    def of(cls, settings) -> MatchPolicy:  # recon.runtime.config.Settings
        return cls(settings.receipt_grace_days, settings.price_tolerance_paise,
                   settings.price_tolerance_percent)

    def tolerates(self, invoice_price_paise: int, po_price_paise: int) -> bool:
        """The rule in Python, as `_PRICE_TOLERATED` states it in SQL, which step 6 applies
        (tests/store/test_price_tolerance.py holds the two together): with no tolerance set, any
        difference counts; with one set, a difference within it is tolerated; with both set, only
        a difference within both."""
        diff = abs(invoice_price_paise - po_price_paise)
        if diff == 0:
            return True
        if not self.price_tolerance_paise and not self.price_tolerance_percent:
            return False
        within_paise = not self.price_tolerance_paise or diff <= self.price_tolerance_paise
        within_share = (not self.price_tolerance_percent
                        or diff * 100 <= self.price_tolerance_percent * po_price_paise)
        return within_paise and within_share
