"""Money is integer paise. Reports show rupees in Indian digit grouping: ₹2,71,500."""

from __future__ import annotations


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


def rupees(paise: int) -> str:
    """₹ with Indian grouping; paise shown only when there are any."""
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
