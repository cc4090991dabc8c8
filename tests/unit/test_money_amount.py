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


def test_sums_per_currency_are_written_side_by_side_never_added():
    from recon.domain.money import amounts, rupees

    assert amounts({"EUR": 7833, "INR": 242500}) == "₹2,425, €78.33"
    assert amounts({"USD": 1, "EUR": 2, "INR": 0}) == "€0.02, $0.01"
    for paise in (0, 242500, -5000):  # a night in ₹ alone reads as it always did
        assert amounts({"INR": paise}) == rupees(paise)
    assert amounts({}) == "₹0"
