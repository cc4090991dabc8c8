"""A model's answer is evidence, checked against the document it claims to read.

The model (or the offline parser) says what an invoice bills; before anything is posted, every
figure it gives must be *on the document*: each line's SKU, quantity and unit price on one text
line of the document, the PO reference and the invoice number somewhere in it, and, when the
document states a total, the lines must add up to it. A disagreement is never reconciled: the
invoice is parked with both readings ("the model read 40 × SKU-L1 at ₹12.50; the document's line
reads ...") for a person. docs/design.md §11 says what this can and cannot catch.

Numbers are compared as paise, whatever their spelling (`numbers.py`). A quantity and a price
must be two different numbers on the line, neither inside the SKU.

Pure and cheap (~30 µs a document here, `bench/evidence.py`): it runs for every document
of every night, on the extraction's hot path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


def _spellings_of_price(paise: int) -> list[str]:
    whole, frac = divmod(paise, 100)
    bodies = {str(whole), group_indian(whole), f"{whole:,}"}
    out = [f"{b}.{frac:02d}" for b in bodies]
    if frac % 10 == 0:
        out += [f"{b}.{frac // 10}" for b in bodies]
    if frac == 0:
        out += list(bodies)
    return out


def _plain_spans(text: str, spelling: str, fields: bool) -> list[tuple[int, int]]:
    """Where `spelling` stands on the line as a whole number by itself: nothing of a word or of
    another number on either side (a subset of what `readings` reads there). `fields`: the line
    is CSV without quotes, so a comma on either side ends a field (as `csv_readings` reads it)."""
    spans = []
    at = text.find(spelling)
    while at >= 0:
        end = at + len(spelling)
        before = text[at - 1] if at else " "
        after = text[end] if end < len(text) else " "
        after2 = text[end + 1] if end + 1 < len(text) else " "
        if (not ((before.isalnum() and not times(text, at)) or before in "-_."
                 or (before == "," and not fields))
                and not (after.isdigit() or after in "-_" or (after.isalpha()
                                                              and after not in "xX"))
                and not (after2.isdigit() and (after == "." or (after == "," and not fields)))):
            spans.append((at, end))
        at = text.find(spelling, at + 1)
    return spans


def _plainly_holds(text: str, skus: list[tuple[int, int]], line: ExtractedLine) -> bool:
    fields = text.count(",") >= CSV_FIELDS - 1 and '"' not in text
    qty = _plain_spans(text, str(line.quantity), fields)
    if not qty:
        return False
    price = [span for spelling in _spellings_of_price(line.unit_price_paise)
             for span in _plain_spans(text, spelling, fields)]
    return any(not _overlaps(q, p) and not any(_overlaps(q, s) or _overlaps(p, s) for s in skus)
               for q in qty for p in price)


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


def disagreement(found: ExtractedInvoice, document: str) -> Disagreement | None:
    """None when every figure of the answer is on the document; otherwise the first
    disagreement, with both readings."""
    texts = document.split("\n")  # line i starts after the i-th newline
    used: set[int] = set()
    for line in found.lines:
        candidates = [i for i, text in enumerate(texts) if line.sku in text]
        match = next((i for i in candidates if i not in used and _line_holds(texts[i], line)),
                     None)
        if match is not None:
            used.add(match)
            continue
        on_sku = [i for i in candidates if _sku_spans(texts[i], line.sku)]
        if not on_sku:
            return Disagreement(
                f"the model read {_reading_of(line)}; the document has no line with "
                f"{line.sku}", "")
        shown = "; ".join(f'"{_quote(texts[i])}"' for i in on_sku[:2])
        return Disagreement(
            f"the model read {_reading_of(line)}; the document's line for {line.sku} reads "
            f"{shown}", "\n".join(texts[i] for i in on_sku[:5]))
    if found.po_number and not _contains_token(document, found.po_number):
        return Disagreement(
            f"the model read PO {found.po_number!r}; the document does not contain it", "")
    if not _contains_token(document, found.invoice_no):
        return Disagreement(
            f"the model read invoice {found.invoice_no!r}; the document does not contain it", "")
    return _total_disagreement(found, document, texts, used)


def _total_disagreement(found: ExtractedInvoice, document: str, texts: list[str],
                        used: set[int]) -> Disagreement | None:
    """When the document states a total (money on a line labelled total, remit, payable, ...;
    not on a line item), the lines must add up to one of the amounts stated."""
    stated: list[int] = []
    where: list[str] = []
    low = document.lower()
    labelled: set[int] = set()
    for word in _TOTAL_WORDS:
        at = low.find(word)
        while at >= 0:
            labelled.add(low.count("\n", 0, at))
            at = low.find(word, at + 1)
    for i in sorted(labelled - used):
        text = texts[i]
        if not _TOTAL_LABEL.search(text):
            continue
        amounts = [r[2] for r in readings(text, money=True) if r[3]]
        if amounts:
            stated += amounts
            where.append(text)
    if not stated:
        return None
    lines_total = sum(ln.quantity * ln.unit_price_paise for ln in found.lines)
    if lines_total in stated:
        return None
    shown = ", ".join(rupees(p) for p in stated[:3])
    return Disagreement(
        f"the model's {len(found.lines)} line{'s' if len(found.lines) != 1 else ''} add up to "
        f"{rupees(lines_total)}; the document "
        f"states {shown} ({_quote(where[0])!r})", "\n".join(where[:5]))
