"""How an ERP export writes its dates and amounts, as the load or the source declares it: never
guessed from a cell. Tally and Busy write `31-10-2026` and `1,45,000.00`; read undeclared, such a
date is refused as always (`must be a date YYYY-MM-DD`), because `01-02-2026` is January or
February depending on who wrote it.

Pure code: each function turns the declared spelling into the plain one the column's parser
takes (recon/documents/master_fields.py), or raises `BadField` naming the declared format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from recon.domain.errors import BadField

ISO = "YYYY-MM-DD"
# The declared spelling -> (pattern, (day, month, year) group order).
DATE_FORMATS: dict[str, tuple[re.Pattern[str], tuple[int, int, int]]] = {
    ISO: (re.compile(r"(\d{4})-(\d{2})-(\d{2})"), (3, 2, 1)),
    "DD-MM-YYYY": (re.compile(r"(\d{2})-(\d{2})-(\d{4})"), (1, 2, 3)),
    "DD/MM/YYYY": (re.compile(r"(\d{2})/(\d{2})/(\d{4})"), (1, 2, 3)),
    "DD.MM.YYYY": (re.compile(r"(\d{2})\.(\d{2})\.(\d{4})"), (1, 2, 3)),
}
PLAIN, INDIAN = "plain", "indian"
AMOUNT_FORMATS = (PLAIN, INDIAN)
# Indian grouping: the last three digits of the whole part, then pairs: 1,45,000 and 12,34,56,789;
# below a thousand no comma. Digits without any comma are as plain, whatever the format.
_INDIAN = re.compile(r"(\d{1,2}(?:,\d{2})*,\d{3}|\d+)(\.\d+)?")


def _shown(value: str) -> str:
    cut = value if len(value) <= 40 else value[:37] + "..."
    return '"' + cut.replace('"', '\\"') + '"'


@dataclass(frozen=True)
class CellFormats:
    """A file's declared formats. The default is the contract of docs/master-data.md as it was:
    ISO dates, amounts with a '.' and no commas."""

    date_format: str = ISO
    amount_format: str = PLAIN

    def __post_init__(self) -> None:
        if self.date_format not in DATE_FORMATS:
            raise ValueError(f"--date-format takes {', '.join(DATE_FORMATS)}; got "
                             f"{self.date_format!r}")
        if self.amount_format not in AMOUNT_FORMATS:
            raise ValueError(f"--amount-format takes {' or '.join(AMOUNT_FORMATS)}; got "
                             f"{self.amount_format!r}")

    @classmethod
    def of(cls, date_format: str | None, amount_format: str | None) -> CellFormats:
        return cls((date_format or ISO).upper(), (amount_format or PLAIN).lower())

    def iso_date(self, value: str) -> str:
        """`31-10-2026` under DD-MM-YYYY -> `2026-10-31`; ISO is given through unchanged (its
        parser words the refusal as it always has)."""
        if self.date_format == ISO:
            return value
        pattern, (d, m, y) = DATE_FORMATS[self.date_format]
        match = pattern.fullmatch(value)
        if not match:
            raise BadField(f"must be a date {self.date_format} (the declared --date-format), got "
                           f"{_shown(value)}")
        iso = f"{match.group(y)}-{match.group(m)}-{match.group(d)}"
        try:
            date.fromisoformat(iso)
        except ValueError:
            raise BadField(f"is no day of the calendar read as {self.date_format}, got "
                           f"{_shown(value)}") from None
        return iso

    def plain_amount(self, value: str) -> str:
        """`1,45,000.00` under indian -> `145000.00`; a misgrouped `14,5000.00` is refused."""
        if self.amount_format == PLAIN or "," not in value:
            return value
        if not _INDIAN.fullmatch(value):
            raise BadField(f"must be rupees in Indian grouping like 1,45,000.00 (the declared "
                           f"--amount-format indian), got {_shown(value)}")
        return value.replace(",", "")
