"""`recon import DIR`: load invoice documents from files so people can run on their own data.

Each file is one document, in any format `recon.documents.formats` reads: GST e-invoice JSON, UBL,
CII, a Factur-X PDF, a PDF with a text layer, or text. The document names itself: its number, its
sender (by GSTIN, VAT id or endpoint, or the PO it cites), its PO and lines come from it; the file
name is only a file name (`recon.documents.attribution`). Nothing is written unless every file can
be attributed: a half-imported night would be reconciled half (`recon.documents.intake`).

Only regular files directly in the folder are invoices. A symbolic link (it could point at any file
on the machine, which would then be stored and sent to a model), a device, a socket or a pipe is
refused by name; dot files and sub-folders are skipped and named in the output. Two files carrying
one (supplier, number) are refused together: importing one and dropping the other would silently
lose an invoice.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import asyncpg

from recon.documents.attribution import Incoming, stem_of
from recon.documents.extraction.schema import MAX_DOCUMENT_CHARS
from recon.documents.formats.detect import read_file
from recon.documents.intake import IntakeResult, directory, plan, store
from recon.domain.errors import ImportProblem

MAX_FILE_BYTES = 10_000_000  # a PDF with its fonts and pictures; text stays under 400 kB


@dataclass(frozen=True)
class ImportResult:
    imported: int
    skipped_existing: int
    skipped_files: list[str] = field(default_factory=list)  # "name (why)", in name order
    intake: IntakeResult | None = None  # formats, credit notes, what step 2 will park


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
    return found


def _read_regular(path: Path) -> bytes:
    """Read without following a link and only if it is still a regular file when opened (the
    folder may change between listing and reading). A PDF may be larger than a text document."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise ImportProblem(f"cannot read {path.name}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ImportProblem(f"{path.name} is not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise ImportProblem(f"{path.name} is larger than an invoice document can be")
        data = handle.read(MAX_FILE_BYTES + 1)
    return checked_size(path.name, data)


def checked_size(name: str, data: bytes) -> bytes:
    """A PDF may be larger than a text document; neither larger than a document can be."""
    is_pdf = b"%PDF-" in data[:1024]
    if len(data) > (MAX_FILE_BYTES if is_pdf else MAX_DOCUMENT_CHARS * 4):
        raise ImportProblem(f"{name} is larger than an invoice document can be")
    return data


async def take_file(conn: asyncpg.Connection, name: str, data: bytes, day: date,
                    warehouse: str) -> IntakeResult:
    """One file of a drop folder, on the caller's connection and inside its transaction (the
    source records the file in the same one), by the rules of `recon import DIR`: an
    ImportProblem is the file's refusal; a file refused alone comes back in `refused`."""
    items = [Incoming(read_file(name, checked_size(name, data)), name, stem_of(name))]
    return await store(conn, plan(items, await directory(conn, items), None), day, warehouse)


async def import_directory(
    pool: asyncpg.Pool, folder: Path, business_date: str, warehouse: str,
    supplier: str | None = None, replace: bool = False,
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
    items = [Incoming(read_file(path.name, _read_regular(path)), path.name, stem_of(path.name))
             for path in files]
    async with pool.acquire() as conn, conn.transaction():
        batch = plan(items, await directory(conn, items), supplier)
        taken = await store(conn, batch, day, warehouse, replace)
    return ImportResult(imported=taken.imported, skipped_existing=taken.skipped_existing,
                        skipped_files=listing.skipped, intake=taken)
