"""The money rules of the cumulative three-way match (docs/design.md §12), as the worker's
policy: how long a bill ahead of its goods is held, how far an invoice price may stray from
the PO price before it is an adjustment, and how much beyond the order a line may accept. Pure
values; recon/store/weighing.py applies them."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from recon.domain import price_rule
from recon.domain.settings_table import default_of


@dataclass(frozen=True)
class MatchPolicy:
    # The settings' defaults (recon.domain.settings_table), for a policy made without settings.
    receipt_grace_days: int = default_of("RECON_RECEIPT_GRACE_DAYS")  # 0: claimed at once
    price_tolerance_paise: int = default_of("RECON_PRICE_TOLERANCE_PAISE")  # per unit; 0: none
    price_tolerance_percent: float = default_of("RECON_PRICE_TOLERANCE_PERCENT")  # of the PO price
    # of the PO line's quantity: what a line may accept beyond the order, whatever arrived
    overdelivery_tolerance_percent: float = default_of("RECON_OVERDELIVERY_TOLERANCE_PERCENT")
    # days an invoice's stated date may lie from the business date (step 3 parks it beyond)
    invoice_date_window_days: int = default_of("RECON_INVOICE_DATE_WINDOW_DAYS")

    @classmethod
    def of(cls, settings) -> MatchPolicy:  # recon.runtime.config.Settings
        return cls(settings.receipt_grace_days, settings.price_tolerance_paise,
                   settings.price_tolerance_percent, settings.overdelivery_tolerance_percent,
                   settings.invoice_date_window_days)

    def tolerates(self, invoice_price_paise: int | Decimal, po_price_paise: int | Decimal) -> bool:
        """The rule step 6 applies in SQL, read from the same text (recon.domain.price_rule):
        with no tolerance set, any difference counts; with one set, a difference within it is
        tolerated; with both set, only a difference within both."""
        return price_rule.holds(price=invoice_price_paise, po_price=po_price_paise,
                                paise=self.price_tolerance_paise,
                                percent=self.price_tolerance_percent)
