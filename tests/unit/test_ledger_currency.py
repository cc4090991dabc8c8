"""An outside ledger is told each entry's currency (issue 37 item 4): the keyed HTTP body carries
the entry's own (never "INR" for a EUR supplier's cents), and Tryton, whose company books in ₹,
refuses another currency in one line before anything is sent (no rate is assumed)."""

from __future__ import annotations

from datetime import date

import pytest

from recon.ledger.keyed_http import body_of
from recon.ledger.port import Entry, LedgerRefused
from recon.ledger.tryton import TrytonLedger

EURO = Entry("recon-2026-10-13-ldh:B:EU-1:1:price", 9_44, "B", "EU-1", 1, "price",
             date(2026, 10, 13), taxable_paise=8_00, taxes=(("vat", 1_44),), currency="EUR")


def test_the_keyed_body_carries_the_entrys_currency() -> None:
    assert body_of(EURO)["currency"] == "EUR" and body_of(EURO)["amount_minor"] == 9_44
    rupee = Entry("k", 236_00, "A", "GST/1", 1, "price", date(2026, 10, 13))
    assert body_of(rupee)["currency"] == "INR"


async def test_tryton_books_in_rupees_and_refuses_euros_without_a_rate() -> None:
    # nothing listens on this port: the refusal comes before any call
    ledger = TrytonLedger("http://127.0.0.1:9", "admin", "x", payable="AP", variance="PPV",
                          journal="EXP")
    with pytest.raises(LedgerRefused) as refused:
        await ledger.post(EURO)
    assert str(refused.value) == (
        "recon-2026-10-13-ldh:B:EU-1:1:price is €9.44: the Tryton company books in ₹ and recon "
        "assumes no exchange rate; post it by hand at the rate of the day")
