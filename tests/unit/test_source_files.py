"""A drop folder's files are taken only once they have stopped growing (recon/sources/files.py):
an old file at once, a young one when two looks a second apart see it unchanged, and one still
being written not at all (the next night takes it). Dot files, folders and links never."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from recon.sources.files import settled_files


async def test_only_settled_regular_files_are_taken(tmp_path: Path) -> None:
    old = tmp_path / "old.xml"
    old.write_text("<Invoice/>")
    os.utime(old, (time.time() - 60,) * 2)
    young = tmp_path / "young.xml"
    young.write_text("<Invoice/>")
    growing = tmp_path / "growing.pdf"
    growing.write_bytes(b"%PDF-1.7 part one")
    (tmp_path / ".upload.tmp").write_text("partial")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.xml").symlink_to(old)

    looking = asyncio.create_task(settled_files(tmp_path))
    await asyncio.sleep(0.3)  # between the two looks: the upload goes on
    with growing.open("ab") as handle:
        handle.write(b" part two")
    taken = await looking
    assert [f.name for f in taken] == ["old.xml", "young.xml"]


async def test_an_old_folder_is_taken_without_waiting(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (time.time() - 60,) * 2)
    started = time.monotonic()
    assert [f.name for f in await settled_files(tmp_path)] == ["a.txt", "b.txt"]
    assert time.monotonic() - started < 0.9, "no second look when every file is settled"
