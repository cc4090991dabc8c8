"""Numbers as documents write them, read as paise: `1,250.50`, `1250.5`, Indian grouping
`1,25,000.00`, `₹1,250`, `Rs. 1250/-`, `INR1,250`, `80x12.50`. Used by `evidence.py` to find
the figures a model says are on a document's line. Pure.

A run of digits and commas is read as one number only when its grouping is valid (western
`1,250,000` or Indian `12,50,000`), else as its pieces; on a line that reads as CSV (four fields
or more) each field is read on its own too, so `80,250.00` is 80 and ₹250.00 there. A number
never comes from inside a word: the 1026 of `SKU-1026` or the 13 of `2026-10-13` is not one.
"""

from __future__ import annotations

import csv
import re

# A number is digits, grouping commas and a fraction, ending on a digit (a sentence's full stop or
# a CSV comma after it is not part of it). It counts only if it starts after neither a word
# character nor '-' (nor "x." as in "v1.2"), unless a currency sign stands right before it
# (`Rs.1250`), and is followed by neither a letter (but the x of `80x12.50`) nor '-' nor '_'
# (`2026-10-13` holds no number, `Almonds 500g` no quantity).
_NUMBER = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?")
_CURRENCY_BEFORE = re.compile(r"(?:₹|(?<![a-z])(?:rs|inr)\.?)\s*$", re.IGNORECASE)
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+|\d{1,2}(?:,\d{2})*,\d{3}")  # western or Indian
CSV_FIELDS = 4

# One way to read a number on a line: (start, end, paise, looks like money), money being a
# fraction or a currency sign before it.
Reading = tuple[int, int, int, bool]


def _paise(text: str) -> int | None:
    whole, dot, frac = text.partition(".")
    if not dot:
        return int(whole) * 100
    if len(frac) > 2 and frac[2:].strip("0"):
        return None  # 12.505 is no price in paise
    return int(whole) * 100 + int((frac + "00")[:2])


def times(line: str, start: int) -> bool:
    """`80x12.50`: an x between two numbers is a multiplication sign, not part of a word."""
    return start > 1 and line[start - 1] in "xX" and line[start - 2].isdigit()


def _currency_before(line: str, start: int) -> bool:
    return _CURRENCY_BEFORE.search(line, max(0, start - 8), start) is not None


def readings(line: str, money: bool = False) -> list[Reading]:
    """Every number on one text line of a document, in each way its characters can be read.
    `money`: also tell which look like money (a fraction, or a currency sign before it)."""
    found: list[Reading] = []
    for m in _NUMBER.finditer(line):
        start, end = m.span()
        if start:
            prev = line[start - 1]
            if (prev.isalnum() or prev in "-_" or (
                    prev == "." and start > 1 and line[start - 2].isalnum())) and not (
                    times(line, start) or _currency_before(line, start)):
                continue  # inside a word: SKU-1026, INV9, v1.2
        if end < len(line) and (line[end] in "-_" or (line[end].isalpha()
                                                     and line[end] not in "xX")):
            continue  # 2026-10-13, 40mm: a date, a size in a description (80x12.50 counts)
        raw = m.group()
        looks = money and ("." in raw or _currency_before(line, start))
        if "," not in raw:
            value = _paise(raw)
            if value is not None:
                found.append((start, end, value, looks))
            continue
        whole = raw.partition(".")[0]
        if _GROUPED.fullmatch(whole):
            value = _paise(raw.replace(",", ""))
            if value is not None:
                found.append((start, end, value, looks))
            continue
        # a run that is not one valid grouping: its pieces (CSV fields as often as not)
        at = start
        for piece in raw.split(","):
            value = _paise(piece) if piece else None
            if value is not None:
                found.append((at, at + len(piece), value, "." in piece))
            at += len(piece) + 1
    return found


def csv_readings(line: str) -> list[Reading]:
    """On a CSV-like line (four fields or more), each field that is wholly a number, read as that
    field: `80,250.00` is 80 and ₹250.00 there, though it is also a valid ₹80,250.00."""
    if line.count(",") < CSV_FIELDS - 1:
        return []
    if '"' in line:
        try:
            fields = next(csv.reader([line]))
        except (csv.Error, StopIteration):
            return []
    else:
        fields = line.split(",")
    if len(fields) < CSV_FIELDS:
        return []
    out: list[Reading] = []
    at = 0
    for field in fields:
        start = line.find(field, at) if field else at
        if start < 0:
            break
        at = end = start + len(field)
        body = field.strip()
        if not _NUMBER.fullmatch(body):
            continue
        whole = body.partition(".")[0]
        if "," in whole and not _GROUPED.fullmatch(whole):
            continue
        value = _paise(body.replace(",", ""))
        if value is not None:
            out.append((start, end, value, "." in body))
    return out
