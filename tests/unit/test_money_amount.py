"""An amount is written in its own currency, never as rupees."""

from recon.domain.money import amount


def test_rupees_keep_indian_grouping():
    assert amount(25030000) == "₹2,50,300"
    assert amount(250333, "INR") == "₹2,503.33"


def test_other_currencies_keep_their_own_minor_unit():
    assert amount(800, "EUR") == "€8.00"
    assert amount(-123456, "CHF") == "-CHF 1,234.56"
    assert amount(1000, "JPY") == "JPY 1,000"
    assert amount(1234, "KWD") == "KWD 1.234"
