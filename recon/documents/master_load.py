"""`recon load suppliers|orders|receipts|conversions FILE.csv`: an ERP's master data export in, all or
nothing per file.

Each file is read whole and every row checked (recon/documents/master_data.py) before the
database is touched; then, in one transaction under the master data lock, the rows are staged by
COPY, checked against the books set-based, and written with one statement per table. The first
line in error is refused (`file:line: field: why`) and nothing of the file is written. A load
may declare how the export writes dates and amounts (`--date-format`, `--amount-format`,
recon/domain/cell_formats.py); suppliers and conversions hold neither and take the formats only
so every loader is called alike. Loading a
file again writes nothing and says so: the summary counts new, changed and unchanged rows.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from recon.documents import master_data as md
from recon.documents.master_csv import decode
from recon.domain.cell_formats import CellFormats
from recon.domain.errors import MasterDataRefused
from recon.store import hsn_rates, orders, receipts, suppliers
from recon.store import units as unit_store
from recon.store.db import lock_master_data

MAX_FILE_BYTES = 512 * 1024 * 1024
PLAIN_FORMATS = CellFormats()


@dataclass(frozen=True)
class LoadSummary:
    """What one file did. `rows` = new + changed + unchanged."""

    file: str
    what: str  # "suppliers", "PO lines", "receipts", "unit conversions"
    rows: int
    new: int
    changed: int
    unchanged: int
    new_orders: int = 0  # orders only: POs the file created

    def line(self) -> str:
        changed = "amended" if self.what == "PO lines" else "changed"
        head = f"{self.file}: {self.rows:,} {self.what}"
        if self.what == "PO lines":
            head += f" ({self.new_orders:,} new POs)"
        counts = f"{self.new:,} new, {self.changed:,} {changed}, {self.unchanged:,} unchanged"
        tail = "; nothing to change: already loaded" if self.rows and not (
            self.new or self.changed) else ""
        return f"{head}: {counts}{tail}"


def read_file(path: Path) -> bytes:
    """The file's bytes, if it is a regular file (a pipe or device would block or never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise MasterDataRefused(f"cannot read {path}: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise MasterDataRefused(f"{path} is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > MAX_FILE_BYTES:
            raise MasterDataRefused(f"{path} is larger than {MAX_FILE_BYTES // 2**20} MB: split it")
        return handle.read()


def _text(path: Path, data: bytes | None = None) -> tuple[str, str]:
    """The file's text; `data` when the caller read the file already (a source's fetch loads the
    very bytes it hashed, whatever the file holds by now)."""
    name = str(path)
    return decode(read_file(path) if data is None else data, name), name


async def load_suppliers(pool: asyncpg.Pool, path: Path,
                         formats: CellFormats = PLAIN_FORMATS, data: bytes | None = None) -> LoadSummary:
    text, name = _text(path, data)
    rows = md.parse_suppliers(text, name)
    async with pool.acquire() as conn, conn.transaction():
        await lock_master_data(conn)
        await suppliers.stage(conn, rows)
        found = await suppliers.first_conflict(conn)
        if found is not None:
            raise {"gstin_taken": md.gstin_taken,
                   "gstin_changed": md.gstin_changed}[found["problem"]](name, found)
        written = await suppliers.write(conn)
    return LoadSummary(name, "suppliers", len(rows), written.new, written.changed,
                       len(rows) - written.new - written.changed)


async def load_orders(pool: asyncpg.Pool, path: Path,
                      formats: CellFormats = PLAIN_FORMATS, data: bytes | None = None) -> LoadSummary:
    text, name = _text(path, data)
    rows = md.parse_orders(text, name, formats)
    async with pool.acquire() as conn, conn.transaction():
        await lock_master_data(conn)
        await orders.stage(conn, rows)
        found = await orders.first_header_conflict(conn) or await orders.first_books_conflict(conn)
        if found is not None:
            raise {"unknown_supplier": md.unknown_supplier,
                   "po_header_changed": md.po_header_changed,
                   "price_changed_after_billing": md.price_changed_after_billing,
                   "qty_below_books": md.qty_below_books}[found["problem"]](name, found)
        written = await orders.write(conn)
    return LoadSummary(name, "PO lines", len(rows), written.new_lines, written.amended_lines,
                       len(rows) - written.new_lines - written.amended_lines,
                       new_orders=written.new_orders)


async def load_hsn_rates(pool: asyncpg.Pool, path: Path,
                         formats: CellFormats = PLAIN_FORMATS, data: bytes | None = None) -> LoadSummary:
    text, name = _text(path, data)
    rows = md.parse_hsn_rates(text, name, formats)
    async with pool.acquire() as conn, conn.transaction():
        await lock_master_data(conn)
        await hsn_rates.stage(conn, rows)
        new, changed = await hsn_rates.write(conn)
    return LoadSummary(name, "HSN rates", len(rows), new, changed, len(rows) - new - changed)


async def load_receipts(pool: asyncpg.Pool, path: Path,
                        formats: CellFormats = PLAIN_FORMATS, data: bytes | None = None) -> LoadSummary:
    text, name = _text(path, data)
    rows = md.parse_receipts(text, name, formats)
    async with pool.acquire() as conn, conn.transaction():
        await lock_master_data(conn)
        await receipts.stage(conn, rows)
        found = await receipts.first_conflict(conn)
        if found is not None:
            raise {"unknown_po": md.unknown_po,
                   "receipt_off_po": md.receipt_off_po,
                   "receipt_wrong_warehouse": md.receipt_wrong_warehouse,
                   "receipt_before_order": md.receipt_before_order,
                   "receipt_changed": md.receipt_changed}[found["problem"]](name, found)
        new = await receipts.write(conn)
    return LoadSummary(name, "receipts", len(rows), new, 0, len(rows) - new)


async def load_conversions(pool: asyncpg.Pool, path: Path,
                           formats: CellFormats = PLAIN_FORMATS, data: bytes | None = None) -> LoadSummary:
    """A supplier's packings per SKU (`unit_conversions.csv`): new ones added, a changed `per` or
    base unit replaces the stored one (it applies to the lines nights match from then on)."""
    text, name = _text(path, data)
    rows = md.parse_conversions(text, name)
    async with pool.acquire() as conn, conn.transaction():
        await lock_master_data(conn)
        await unit_store.stage(conn, rows)
        found = await unit_store.first_conflict(conn)
        if found is not None:
            raise md.conversion_unknown_supplier(name, found)
        new, changed = await unit_store.write(conn)
    return LoadSummary(name, "unit conversions", len(rows), new, changed,
                       len(rows) - new - changed)
