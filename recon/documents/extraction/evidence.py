"""A model's answer is evidence, checked against the document it claims to read.

The model says what an invoice bills; before anything is posted, every
figure it gives must be *on the document*: each line's SKU, quantity and unit price on one text
line of the document, the PO reference and the invoice number somewhere in it, and, when the
document states a total, the lines must add up to it. A disagreement is never reconciled: the
invoice is parked with both readings ("the model read 40 × SKU-L1 at ₹12.50; the document's line
reads ...") for a person. docs/design.md §11 says what this can and cannot catch.

Numbers are compared as paise, whatever their spelling (`numbers.py`). A quantity and a price
must be two different numbers on the line, neither inside the SKU.

Pure and cheap (~25 µs an answer here, `bench/evidence.py`). It checks model answers; the
offline parser, whose regexes take every figure from the very line they match, is not checked
again (tests/unit/test_evidence.py holds the two in agreement over a seeded night).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from recon.documents.extraction.numbers import CSV_FIELDS, Reading, csv_readings, readings, times
from recon.documents.extraction.schema import ExtractedInvoice, ExtractedLine
from recon.domain.money import group_indian, rupees

_TOTAL_LABEL = re.compile(r"\b(?:total|sub-?total|amount due|remit|payable|taxable)\b",
                          re.IGNORECASE)
_TOTAL_WORDS = ("total", "amount due", "remit", "payable", "taxable")  # _TOTAL_LABEL's words
_QUOTE = 160  # characters of a document line quoted in a reason


def _sku_spans(line: str, sku: str) -> list[tuple[int, int]]:
    """Where the SKU stands on the line as a whole token (SKU-L1 is not inside SKU-L10)."""
    spans = []
    at = line.find(sku)
    while at >= 0:
        end = at + len(sku)
        before = line[at - 1] if at else " "
        after = line[end] if end < len(line) else " "
        if not (before.isalnum() or before in "-_/") and not (after.isalnum() or after in "-_/"):
            spans.append((at, end))
        at = line.find(sku, at + 1)
    return spans


def _overlaps(a: Reading | tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _line_holds(text: str, line: ExtractedLine) -> bool:
    """The SKU, the quantity and the unit price all on this one text line, as three different
    tokens. The usual spellings are looked up first (`_plainly_holds`); only a line they do not
    settle is read number by number."""
    skus = _sku_spans(text, line.sku)
    if not skus:
        return False
    if _plainly_holds(text, skus, line):
        return True
    found = readings(text)
    return _holds(found, skus, line) or _holds(found + csv_readings(text), skus, line)


@lru_cache(maxsize=8192)
def _spellings_of_price(paise: int) -> tuple[str, ...]:
    """How documents usually write an amount, most usual first (`1,250.50` Indian or western
    grouped, then `1250.50`, `1250.5`, and without paise when there are none). Prices repeat
    from night to night: kept."""
    whole, frac = divmod(paise, 100)
    bodies = list(dict.fromkeys((group_indian(whole), f"{whole:,}", str(whole))))
    out = [f"{b}.{frac:02d}" for b in bodies]
    if frac % 10 == 0:
        out += [f"{b}.{frac // 10}" for b in bodies]
    if frac == 0:
        out += bodies
    return tuple(out)


def _plain_spans(text: str, spelling: str, fields: bool) -> list[tuple[int, int]]:
    """Where `spelling` stands on the line as a whole number by itself: nothing of a word or of
    another number on either side (a subset of what `readings` reads there): a comma next to it
    may be a grouping comma only with a digit beyond it. `fields`: the line is CSV without
    quotes, so a comma on either side ends a field (as `csv_readings` reads it)."""
    spans = []
    at = text.find(spelling)
    while at >= 0:
        end = at + len(spelling)
        before = text[at - 1] if at else " "
        after = text[end] if end < len(text) else " "
        after2 = text[end + 1] if end + 1 < len(text) else " "
        if (not ((before.isalnum() and not times(text, at)) or before in "-_."
                 or (before == "," and not fields and at > 1 and text[at - 2].isdigit()))
                and not (after.isdigit() or after in "-_" or (after.isalpha()
                                                              and after not in "xX"))
                and not (after2.isdigit() and (after == "." or (after == "," and not fields)))):
            spans.append((at, end))
        at = text.find(spelling, at + 1)
    return spans


def _plainly_holds(text: str, skus: list[tuple[int, int]], line: ExtractedLine) -> bool:
    qty_text = str(line.quantity)
    if qty_text not in text:
        return False
    fields = text.count(",") >= CSV_FIELDS - 1 and '"' not in text
    qty = _plain_spans(text, qty_text, fields)
    if not qty:
        return False
    for spelling in _spellings_of_price(line.unit_price_paise):
        if spelling not in text:
            continue
        for p in _plain_spans(text, spelling, fields):
            if any(not _overlaps(q, p) and not any(_overlaps(q, s) or _overlaps(p, s)
                                                   for s in skus) for q in qty):
                return True
    return False


def _holds(found: list[Reading], skus: list[tuple[int, int]], line: ExtractedLine) -> bool:
    want_qty, want_price = line.quantity * 100, line.unit_price_paise
    qty = [r for r in found if r[2] == want_qty]
    if not qty:
        return False
    price = [r for r in found if r[2] == want_price]
    return any(
        (q[1] <= p[0] or p[1] <= q[0])
        and not any(_overlaps(q, s) or _overlaps(p, s) for s in skus)
        for q in qty for p in price)


def _quote(text: str) -> str:
    """A document line as a reason quotes it: one line, control characters escaped (`\\x1b`),
    at most _QUOTE characters. The document is evidence, never markup or terminal control."""
    text = " ".join(text.split())
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return text if len(text) <= _QUOTE else text[:_QUOTE - 1] + "…"


def _reading_of(line: ExtractedLine) -> str:
    return (f"{line.quantity} × {line.sku} at {rupees(line.unit_price_paise)}"
            f" (line {line.line_no})")


def _contains_token(document: str, token: str) -> bool:
    return bool(_sku_spans(document, token))


@dataclass(frozen=True)
class Disagreement:
    """What the model read and what the document says, as one reason for a person."""

    reason: str
    evidence: str


def _lines_with(document: str, token: str) -> list[tuple[int, int]]:
    """(start, end) of every text line of the document on which `token` stands as a whole
    token, in order, each once."""
    found: list[tuple[int, int]] = []
    at = document.find(token)
    while at >= 0:
        end = at + len(token)
        before = document[at - 1] if at else " "
        after = document[end] if end < len(document) else " "
        if not (before.isalnum() or before in "-_/") and not (after.isalnum() or after in "-_/"):
            start = document.rfind("\n", 0, at) + 1
            stop = document.find("\n", end)
            span = (start, len(document) if stop < 0 else stop)
            if not found or found[-1] != span:
                found.append(span)
        at = document.find(token, at + 1)
    return found


def disagreement(found: ExtractedInvoice, document: str) -> Disagreement | None:
    """None when every figure of the answer is on the document; otherwise the first
    disagreement, with both readings."""
    used: set[int] = set()  # document lines (by where they start) already backing a line
    backing: list[tuple[ExtractedLine, tuple[int, int], list[tuple[int, int]]]] = []
    for line in found.lines:
        on_sku = _lines_with(document, line.sku)
        match = next(((start, stop) for start, stop in on_sku
                      if start not in used and _line_holds(document[start:stop], line)), None)
        if match is not None:
            used.add(match[0])
            backing.append((line, match, on_sku))
            continue
        if not on_sku:
            return Disagreement(
                f"the model read {_reading_of(line)}; the document has no line with "
                f"{line.sku}", "")
        shown = "; ".join(f'"{_quote(document[a:b])}"' for a, b in on_sku[:2])
        return Disagreement(
            f"the model read {_reading_of(line)}; the document's line for {line.sku} reads "
            f"{shown}", "\n".join(document[a:b] for a, b in on_sku[:5]))
    if found.po_number and not _contains_token(document, found.po_number):
        return Disagreement(
            f"the model read PO {found.po_number!r}; the document does not contain it", "")
    if not _contains_token(document, found.invoice_no):
        return Disagreement(
            f"the model read invoice {found.invoice_no!r}; the document does not contain it", "")
    return (_second_reading(document, backing, used) or _totals_disagree(document, used)
            or _total_disagreement(found, document, used))


def _figures(text: str, sku: str) -> list[Reading]:
    """The numbers of a text line outside the SKU's own spelling: a quantity or a price a line
    could be read as billing."""
    skus = _sku_spans(text, sku)
    return [r for r in readings(text) if not any(_overlaps(r, s) for s in skus)]


def _second_reading(document: str, backing: list[tuple[ExtractedLine, tuple[int, int],
                                                       list[tuple[int, int]]]],
                    used: set[int]) -> Disagreement | None:
    """A SKU whose quantity or price can be read from another line of the document with other
    figures (a "delivery memo" beside the billed line, say): the document reads two ways, and
    nothing the model says can choose between them. A line backing another answer line, a line
    that repeats the same quantity and price, and a line with no figure of its own are no second
    reading."""
    for line, (start, stop), on_sku in backing:
        for a, b in on_sku:
            if a in used or a == start:
                continue
            other = document[a:b]
            if _line_holds(other, line) or not _figures(other, line.sku):
                continue
            return Disagreement(
                f"the document reads {line.sku} on more than one line with other figures: "
                f'"{_quote(document[start:stop])}" (the model read {_reading_of(line)}) and '
                f'"{_quote(other)}"; a person reads which one it bills',
                f"{document[start:stop]}\n{other}")
    return None


_MAX_EXPLAINING = 16  # lines of money (tax, freight, round-off) that may explain two totals


def _last_money(text: str) -> int | None:
    amounts = [r[2] for r in readings(text, money=True) if r[3]]
    return amounts[-1] if amounts else None


def _totals_disagree(document: str, used: set[int]) -> Disagreement | None:
    """More than one total (each total line's last amount) that disagree: parked with both.
    Two totals agree when they are the same amount, or differ by what other lines of money
    state (tax, freight, a round-off: some of their amounts add up to the difference), so
    sub-total + tax = total is one total, and "Total 9,600 / Amount payable 4,800" is two."""
    stated: dict[int, str] = {}
    total_starts: set[int] = set()
    for start, text in _total_lines_at(document, used):
        total_starts.add(start)
        amount = _last_money(text)
        if amount is not None:
            stated.setdefault(amount, text)
    if len(stated) < 2:
        return None
    sums = {0}
    at = 0
    for text in document.split("\n"):
        start, at = at, at + len(text) + 1
        if start in used or start in total_starts:
            continue
        amount = _last_money(text)
        if amount is not None and len(sums) < 2 ** _MAX_EXPLAINING:
            sums |= {s + amount for s in sums}
    amounts = sorted(stated)
    for i, low in enumerate(amounts):
        for high in amounts[i + 1:]:
            if high - low not in sums:
                return Disagreement(
                    f"the document states totals that disagree: {rupees(high)} "
                    f"({_quote(stated[high])!r}) and {rupees(low)} ({_quote(stated[low])!r}); "
                    f"a person reads which one it bills",
                    f"{stated[high]}\n{stated[low]}")
    return None


def _total_lines(document: str, used: set[int]) -> list[str]:
    """The text lines labelled as a total (total, sub-total, amount due, remit, payable,
    taxable) that back no line item, in order."""
    return [text for _start, text in _total_lines_at(document, used)]


def _total_lines_at(document: str, used: set[int]) -> list[tuple[int, str]]:
    """(where it starts, text) of each total line, in order."""
    low = document.lower()
    starts: set[int] = set()
    for word in _TOTAL_WORDS:
        at = low.find(word)
        while at >= 0:
            starts.add(low.rfind("\n", 0, at) + 1)
            at = low.find(word, at + 1)
    lines = []
    for start in sorted(starts - used):
        stop = document.find("\n", start)
        text = document[start:len(document) if stop < 0 else stop]
        if _TOTAL_LABEL.search(text):
            lines.append((start, text))
    return lines


def _total_disagreement(found: ExtractedInvoice, document: str,
                        used: set[int]) -> Disagreement | None:
    """When the document states a total (money on a line labelled total, remit, payable, ...;
    not on a line item), the lines must add up to one of the amounts stated. The sum's usual
    spellings with paise are looked up first; only a document they do not settle is read number
    by number."""
    total_lines = _total_lines(document, used)
    if not total_lines:
        return None
    lines_total = sum(ln.quantity * ln.unit_price_paise for ln in found.lines)
    with_paise = [sp for sp in _spellings_of_price(lines_total) if "." in sp]
    if any(sp in text and _plain_spans(text, sp, False)
           for text in total_lines for sp in with_paise):
        return None
    stated: list[int] = []
    where: list[str] = []
    for text in total_lines:
        amounts = [r[2] for r in readings(text, money=True) if r[3]]
        if amounts:
            stated += amounts
            where.append(text)
    if not stated or lines_total in stated:
        return None
    shown = ", ".join(rupees(p) for p in stated[:3])
    return Disagreement(
        f"the model's {len(found.lines)} line{'s' if len(found.lines) != 1 else ''} add up to "
        f"{rupees(lines_total)}; the document "
        f"states {shown} ({_quote(where[0])!r})", "\n".join(where[:5]))
