"""Money is integer paise, shown as ₹ with Indian grouping (lakh, crore), parsed exactly."""

from __future__ import annotations

import pytest

from recon.domain.money import group_indian, parse_rupees, rupees


@pytest.mark.parametrize(("whole", "grouped"), [
    (0, "0"),
    (7, "7"),
    (999, "999"),
    (1_000, "1,000"),
    (99_999, "99,999"),
    (1_00_000, "1,00,000"),  # one lakh
    (2_71_500, "2,71,500"),
    (10_00_000, "10,00,000"),
    (1_00_00_000, "1,00,00,000"),  # one crore
    (12_34_56_78_901, "12,34,56,78,901"),
])
def test_indian_grouping(whole: int, grouped: str) -> None:
    assert group_indian(whole) == grouped


@pytest.mark.parametrize(("paise", "shown"), [
    (0, "₹0"),
    (5, "₹0.05"),
    (99, "₹0.99"),
    (100, "₹1"),
    (2_71_500_00, "₹2,71,500"),
    (2_71_500_05, "₹2,71,500.05"),
    (1_00_00_000_10, "₹1,00,00,000.10"),
    (-5, "-₹0.05"),
    (-1_23_456_78, "-₹1,23,456.78"),
])
def test_rupees_shows_paise_only_when_there_are_any(paise: int, shown: str) -> None:
    assert rupees(paise) == shown


@pytest.mark.parametrize(("text", "paise"), [
    ("1,234.50", 123_450),
    ("1234.5", 123_450),
    ("1234", 123_400),
    ("0.05", 5),
    ("₹2,71,500", 2_71_500_00),
    ("Rs. 12", 1_200),
    ("Rs12.05", 1_205),
    ("  7  ", 700),
    ("1,23,45,678.90", 1_23_45_678_90),
])
def test_parse_rupees_is_exact(text: str, paise: int) -> None:
    assert parse_rupees(text) == paise


@pytest.mark.parametrize("text", ["", "   ", "₹", "1.2.3", "-5", "1.234", "abc", "12.a", "1e3", ".50"])
def test_parse_rupees_refuses_what_is_not_an_amount(text: str) -> None:
    with pytest.raises(ValueError, match="not an amount"):
        parse_rupees(text)


@pytest.mark.parametrize("paise", [0, 1, 99, 100, 12_345, 2_71_500_00, 98_76_54_321_01])
def test_what_rupees_shows_parses_back_to_the_same_paise(paise: int) -> None:
    assert parse_rupees(rupees(paise)) == paise
