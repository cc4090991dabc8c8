"""How a count reads in a sentence a person reads: "1 debit note", "2 debit notes". One rule, so
no message says "1 bills" or "1 requests"."""

from __future__ import annotations

_IRREGULAR = {"entry": "entries", "was": "were"}


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun, in the singular for exactly one, with thousands separators."""
    if n == 1:
        return f"1 {noun}"
    return f"{n:,} {plural or _IRREGULAR.get(noun) or noun + 's'}"
