"""`recon import DIR`: load invoice documents from files so people can run on their own data.

Each file is one invoice; its name (without extension) is the invoice number. The sender is read
from the document when the layout names it, or given with --supplier. Nothing is written unless
every file can be attributed: a half-imported night would be reconciled half.

Only regular files directly in the folder are invoices. A symbolic link (it could point at any file
on the machine, which would then be stored and sent to a model), a device, a socket or a pipe is
refused by name; dot files and sub-folders are skipped and named in the output. Two files with the
same invoice number (`INV-9.txt`, `INV-9.csv`) are refused together: importing one and dropping the
other would silently lose an invoice.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import asyncpg

from recon.documents.extraction.offline import parse_document
from recon.documents.extraction.schema import MAX_DOCUMENT_CHARS
from recon.domain.errors import ImportProblem, UnreadableInvoice
from recon.store import seeding


@dataclass(frozen=True)
class ImportResult:
    imported: int
    skipped_existing: int
    skipped_files: list[str] = field(default_factory=list)  # "name (why)", in name order


@dataclass
class _Folder:
    files: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _list_folder(folder: Path) -> _Folder:
    """Sort the folder's entries into invoice files and skipped entries; refuse the rest. Nothing
    here follows a link: the entry's own type decides."""
    found = _Folder()
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name.startswith("."):
            found.skipped.append(f"{entry.name} (dot file)")
        elif entry.is_symlink():
            raise ImportProblem(
                f"{entry.name} is a symbolic link (to {os.readlink(entry.path)}): only regular "
                "files inside the folder are imported; copy the document in instead")
        elif entry.is_dir(follow_symlinks=False):
            found.skipped.append(f"{entry.name} (folder)")
        elif entry.is_file(follow_symlinks=False):
            found.files.append(Path(entry.path))
        else:
            raise ImportProblem(
                f"{entry.name} is not a regular file (a device, socket or pipe): only regular "
                "files are imported")
    by_number: dict[str, list[str]] = {}
    for path in found.files:
        by_number.setdefault(path.stem, []).append(path.name)
    for number, names in by_number.items():
        if len(names) > 1:
            raise ImportProblem(
                f"{' and '.join(names)} all carry invoice number {number}: keep one of them")
    return found


def _read_regular(path: Path) -> str:
    """Read without following a link and only if it is still a regular file when opened (the
    folder may change between listing and reading)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise ImportProblem(f"cannot read {path.name}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ImportProblem(f"{path.name} is not a regular file")
        if info.st_size > MAX_DOCUMENT_CHARS * 4:
            raise ImportProblem(f"{path.name} is larger than an invoice document can be")
        data = handle.read(MAX_DOCUMENT_CHARS * 4 + 1)
    if len(data) > MAX_DOCUMENT_CHARS * 4:
        raise ImportProblem(f"{path.name} is larger than an invoice document can be")
    # As text mode would read it: universal newlines, undecodable bytes replaced.
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _sender(text: str, fallback: str | None) -> str | None:
    try:
        return parse_document(text).supplier_id
    except UnreadableInvoice:
        return fallback


async def import_directory(
    pool: asyncpg.Pool, folder: Path, business_date: str, warehouse: str,
    supplier: str | None = None,
) -> ImportResult:
    try:
        day = date.fromisoformat(business_date)
    except ValueError:
        raise ImportProblem(f"--date must be YYYY-MM-DD, got {business_date!r}") from None
    if not folder.is_dir():
        raise ImportProblem(f"{folder} is not a folder")
    listing = _list_folder(folder)
    files = listing.files
    if not files:
        raise ImportProblem(f"{folder} holds no invoice files"
                            + (f" (skipped: {', '.join(listing.skipped)})" if listing.skipped else ""))
    rows, unattributed = [], []
    for path in files:
        # Postgres text cannot hold NUL; keep the document (it will be parked as unreadable if
        # nobody can read it) rather than refuse the whole folder.
        text = _read_regular(path).replace("\x00", "\ufffd")
        sender = _sender(text, supplier)
        if sender is None:
            unattributed.append(path.name)
        rows.append((path.stem, sender, day, warehouse, text))
    if unattributed:
        raise ImportProblem(
            f"{len(unattributed)} file(s) do not name their supplier (e.g. {unattributed[0]}): "
            "pass --supplier ID"
        )
    async with pool.acquire() as conn, conn.transaction():
        known = await seeding.known_suppliers(conn)
        unknown = sorted({r[1] for r in rows} - known)
        if unknown:
            raise ImportProblem(f"unknown supplier(s): {', '.join(unknown[:5])}")
        inserted = await seeding.insert_imported_invoices(conn, rows)
    return ImportResult(imported=len(inserted), skipped_existing=len(rows) - len(inserted),
                        skipped_files=listing.skipped)
