"""Money is integer minor units of its own currency (paise for ₹). Reports show rupees in Indian
digit grouping (₹2,71,500), any other currency in its own sign, and never add two currencies.

A unit *price* may hold a fraction of a paisa (a document's ₹10.004: `Decimal` paise 1000.4);
`rupees` and `amount` show it with its decimals, never rounded. Amounts are whole paise.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal


def group_indian(whole: int) -> str:
    digits = str(whole)
    if len(digits) <= 3:
        return digits
    head, tail = digits[:-3], digits[-3:]
    pairs = []
    while len(head) > 2:
        pairs.insert(0, head[-2:])
        head = head[:-2]
    if head:
        pairs.insert(0, head)
    return ",".join(pairs + [tail])


def _fraction_of_a_minor_unit(minor: int | Decimal, digits: int) -> str | None:
    """'10.004' for Decimal 1000.4 (2 digits): a price finer than the minor unit, else None."""
    if not isinstance(minor, Decimal) or minor == minor.to_integral_value():
        return None
    return format(abs(minor).scaleb(-digits).normalize(), "f")


def rupees(paise: int | Decimal) -> str:
    """₹ with Indian grouping; paise shown only when there are any (a fraction of a paisa too)."""
    if (finer := _fraction_of_a_minor_unit(paise, 2)) is not None:
        whole, _, fraction = finer.partition(".")
        return f"{'-' if paise < 0 else ''}₹{group_indian(int(whole))}.{fraction}"
    paise = int(paise)
    sign = "-" if paise < 0 else ""
    whole, fraction = divmod(abs(paise), 100)
    text = f"{sign}₹{group_indian(whole)}"
    return f"{text}.{fraction:02d}" if fraction else text


def parse_rupees(text: str) -> int:
    """'1,234.50' or '1234.5' -> 123450 paise, exactly (no floats)."""
    cleaned = text.strip().replace(",", "").replace("₹", "").removeprefix("Rs.").removeprefix("Rs")
    cleaned = cleaned.strip()
    if not cleaned or cleaned.count(".") > 1:
        raise ValueError(f"not an amount: {text!r}")
    whole, _, frac = cleaned.partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()) or len(frac) > 2:
        raise ValueError(f"not an amount: {text!r}")
    return int(whole) * 100 + int((frac + "00")[:2])


# ISO 4217 minor units where they are not 2; amounts are stored in the currency's minor unit.
_MINOR_DIGITS = {"JPY": 0, "KRW": 0, "VND": 0, "CLP": 0, "ISK": 0, "UGX": 0,
                 "BHD": 3, "KWD": 3, "OMR": 3, "JOD": 3, "TND": 3, "IQD": 3, "LYD": 3}
_SYMBOLS = {"INR": "₹", "EUR": "€", "USD": "$", "GBP": "£"}
BASE_CURRENCY = "INR"  # the books' own currency: ₹


def minor_digits(currency: str) -> int:
    return _MINOR_DIGITS.get(currency.upper(), 2)


def amount(minor: int | Decimal, currency: str = BASE_CURRENCY) -> str:
    """An amount in `currency`'s minor unit, written in that currency, never another: ₹ in Indian
    grouping (as `rupees`), €/$/£ with Western grouping, any other code as its prefix
    ("CHF 1,234.50"). Two currencies are never added together before this is called."""
    code = (currency or BASE_CURRENCY).upper()
    if code == BASE_CURRENCY:
        return rupees(minor)
    digits = minor_digits(code)
    if (finer := _fraction_of_a_minor_unit(minor, digits)) is not None:
        whole, _, fraction = finer.partition(".")
        text = f"{int(whole):,}.{fraction}"
        symbol = _SYMBOLS.get(code)
        return f"{'-' if minor < 0 else ''}{symbol or code + ' '}{text}"
    minor = int(minor)
    sign = "-" if minor < 0 else ""
    whole, fraction = divmod(abs(minor), 10 ** digits) if digits else (abs(minor), 0)
    text = f"{whole:,}" + (f".{fraction:0{digits}d}" if digits else "")
    symbol = _SYMBOLS.get(code)
    return f"{sign}{symbol}{text}" if symbol else f"{sign}{code} {text}"


def amounts(totals: Mapping[str, int]) -> str:
    """Sums kept per currency (`{"INR": 242500, "EUR": 7833}`), written side by side and never
    added: "₹2,425, €78.33". ₹ comes first, then the others by code; a currency whose sum is zero
    is left out, and nothing at all is "₹0", as a night in ₹ alone always read."""
    shown = {(c or BASE_CURRENCY).upper(): int(v) for c, v in totals.items() if int(v)}
    if not shown:
        return rupees(0)
    order = sorted(shown, key=lambda c: (c != BASE_CURRENCY, c))
    return ", ".join(amount(shown[c], c) for c in order)
