"""`recon import` reads only regular files inside the folder: links, pipes and two files carrying
one invoice number are refused by name with nothing written; skipped entries are named; a file
name with a line break cannot cut the error line short."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import asyncpg
import pytest

from recon.documents.layouts import Document, DocumentLine, render
from tests.helpers import recon_cli


def _invoice(folder: Path, name: str, invoice_no: str, day: str) -> None:
    doc = Document(invoice_no, "S001", "Sharma Foods Pvt Ltd", day, "PO-NONE",
                   [DocumentLine("SKU-1001", "Basmati rice 5kg", 3, 45_000)])
    (folder / name).write_text(render(doc, "table"))


@pytest.fixture
async def inbox(pool: asyncpg.Pool, night, tmp_path: Path) -> Path:
    await pool.execute("INSERT INTO suppliers VALUES ('S001', 'Sharma Foods Pvt Ltd',"
                       " 'accounts@sharma.example') ON CONFLICT DO NOTHING")
    day, warehouse, _queue = night
    folder = tmp_path / "inbox"
    folder.mkdir()
    _invoice(folder, f"IR-{warehouse}-1.txt", f"IR-{warehouse}-1", day)
    return folder


async def _import(stack, night, folder: Path):
    day, warehouse, _queue = night
    return await asyncio.to_thread(recon_cli, stack.env(), "import", str(folder), "--date", day,
                                   "--warehouse", warehouse, "--supplier", "S001")


async def _stored(pool: asyncpg.Pool, night) -> int:
    return await pool.fetchval("SELECT count(*) FROM invoices WHERE warehouse = $1", night[1])


def _one_error_line(done) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr
    return lines[0]


async def test_symbolic_link_is_refused(pool, stack, night, inbox: Path, tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    _invoice(tmp_path, "outside.txt", f"IR-{night[1]}-secret", night[0])
    (inbox / f"IR-{night[1]}-2.txt").symlink_to(secret)
    line = _one_error_line(await _import(stack, night, inbox))
    assert f"IR-{night[1]}-2.txt is a symbolic link" in line and str(secret) in line
    assert await _stored(pool, night) == 0


async def test_pipe_is_refused_without_hanging(pool, stack, night, inbox: Path) -> None:
    os.mkfifo(inbox / f"IR-{night[1]}-pipe")
    line = _one_error_line(await _import(stack, night, inbox))
    assert f"IR-{night[1]}-pipe is not a regular file" in line
    assert await _stored(pool, night) == 0


async def test_two_files_with_one_invoice_number_are_refused(pool, stack, night, inbox) -> None:
    number = f"IR-{night[1]}-9"
    _invoice(inbox, f"{number}.txt", number, night[0])
    _invoice(inbox, f"{number}.csv", number, night[0])
    line = _one_error_line(await _import(stack, night, inbox))
    assert f"{number}.csv and {number}.txt" in line and f"invoice number {number}" in line
    assert await _stored(pool, night) == 0


async def test_skipped_entries_are_named(pool, stack, night, inbox: Path) -> None:
    (inbox / ".DS_Store").write_bytes(b"\x00\x01")
    (inbox / "scans").mkdir()
    (inbox / ".hidden-link").symlink_to("/etc/hostname")
    done = await _import(stack, night, inbox)
    assert done.returncode == 0, done.stderr
    assert "imported 1 invoice for" in done.stdout
    assert ("skipped 3 not invoice files: .DS_Store (dot file), .hidden-link (dot file), "
            "scans (folder)") in done.stdout
    assert await _stored(pool, night) == 1


async def test_a_name_with_a_line_break_stays_on_one_error_line(pool, stack, night, inbox) -> None:
    (inbox / f"IR-{night[1]}-evil\nerror: forged.txt").symlink_to("/etc/hostname")
    line = _one_error_line(await _import(stack, night, inbox))
    assert f"IR-{night[1]}-evil\\nerror: forged.txt is a symbolic link (to /etc/hostname)" in line
    assert "copy the document in instead" in line, "the rest of the line is kept"
    assert await _stored(pool, night) == 0


@pytest.mark.parametrize("trick", ["\x1b[2J", "\u202e", "\x07"])
async def test_an_invoice_number_with_a_control_character_is_refused(
    pool, stack, night, inbox: Path, trick: str
) -> None:
    """Issue 39, item 6: ESC, a bidi override or a bell in an invoice number never gets in (a
    supplier reads the number back in its debit note); the batch is refused in one line."""
    day, warehouse, _queue = night
    _invoice(inbox, "trick.txt", f"IR-{warehouse}-{trick}9", day)
    before = await _stored(pool, night)
    line = _one_error_line(await _import(stack, night, inbox))
    assert "holds a control or bidirectional character" in line and "trick.txt" in line
    assert trick not in line
    assert await _stored(pool, night) == before
