"""Reading one master data CSV as an ERP exports it, before any column means anything: UTF-8
with or without a byte-order mark, LF or CRLF line ends, a header naming the columns (in any
order, any case), then one record per line. Blank lines are skipped.

Pure code: it takes the file's bytes and name and gives `(line, {column: value})` pairs; every
refusal is one `MasterDataRefused` line `file:line: field: why`, the line being the physical
line of the file where the record starts (what an editor shows).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from recon.domain.errors import BadField, MasterDataRefused

T = TypeVar("T")

MAX_ROWS = 1_000_000  # per file; the largest load measured is 100,000 PO lines
MAX_FIELD_CHARS = 1_000


def refusal(file: str, line: int, field: str, why: str) -> MasterDataRefused:
    """The one line of every refusal: `orders.csv:7: qty_ordered: must be ...`."""
    return MasterDataRefused(f"{file}:{line}: {field}: {why}")


def decode(data: bytes, file: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise refusal(file, line, "encoding", f"not UTF-8 (byte 0x{data[exc.start]:02x}); "
                      "export the file as UTF-8") from None


def _control_free(value: str) -> bool:
    return value.isprintable()


def records(text: str, file: str, required: Sequence[str],
            optional: Sequence[str] = ()) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield `(line, row)` for each record after the header, values stripped of surrounding
    spaces; `row` holds every required column and each optional one the header names."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    columns: list[str] | None = None
    end_of_last = 0  # physical line where the previous record ended
    rows = 0
    try:
        for raw in reader:
            line, end_of_last = end_of_last + 1, reader.line_num
            if not raw or all(not cell.strip() for cell in raw):
                continue
            if columns is None:
                columns = _header(raw, file, line, required, optional)
                continue
            rows += 1
            if rows > MAX_ROWS:
                raise refusal(file, line, "file", f"more than {MAX_ROWS:,} rows: split the file")
            yield line, _row(raw, columns, file, line)
    except csv.Error as exc:
        raise refusal(file, reader.line_num, "csv", f"{exc}") from None
    if columns is None:
        raise refusal(file, 1, "header", "the file is empty; the first line must name the "
                      f"columns: {','.join(required)}")


def _header(raw: list[str], file: str, line: int, required: Sequence[str],
            optional: Sequence[str]) -> list[str]:
    names = [cell.strip().lower() for cell in raw]
    known = set(required) | set(optional)
    expected = ",".join(required) + "".join(f"[,{o}]" for o in optional)
    for name in names:
        if name not in known:
            raise refusal(file, line, "header", f"unknown column {name[:40]!r}; the columns "
                          f"are {expected}")
        if names.count(name) > 1:
            raise refusal(file, line, "header", f"column {name!r} appears twice")
    missing = [name for name in required if name not in names]
    if missing:
        raise refusal(file, line, "header", f"missing column(s) {', '.join(missing)}; the "
                      f"columns are {expected}")
    return names


def _row(raw: list[str], columns: list[str], file: str, line: int) -> dict[str, str]:
    if len(raw) != len(columns):
        raise refusal(file, line, "row", f"has {len(raw)} fields, the header has "
                      f"{len(columns)}")
    row: dict[str, str] = {}
    for name, cell in zip(columns, raw, strict=True):
        value = cell.strip()
        if len(value) > MAX_FIELD_CHARS:
            raise refusal(file, line, name, f"is {len(value):,} characters long")
        if not _control_free(value):
            raise refusal(file, line, name, "holds a control character (a line break, tab or "
                          "NUL inside the value)")
        row[name] = value
    return row


def field(file: str, line: int, name: str, parse: Callable[..., T], value: str, **kwargs: Any) -> T:
    """Parse one value; a `BadField` becomes the file's one-line refusal."""
    try:
        return parse(value, **kwargs)
    except BadField as exc:
        raise refusal(file, line, name, str(exc)) from None
