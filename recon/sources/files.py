"""A folder's files as a night takes them: regular files only, each once it has stopped growing,
named by its SHA-256 and its name.

A file is still being written while its size or modification time moves: it is taken when it is
older than `SETTLED_SECONDS`, or when two looks `LOOK_AGAIN_SECONDS` apart see the same size and
time. A file still growing at the fetch is left for the next night (never taken half-written).
Dot files (an upload's temporary name), sub-folders, links, pipes and devices are never taken.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

SETTLED_SECONDS = 5.0
LOOK_AGAIN_SECONDS = 1.0
MAX_FILE_BYTES = 64 * 1024 * 1024  # larger than any invoice or export it is meant to hold


@dataclass(frozen=True)
class FolderFile:
    name: str
    path: Path
    size: int
    mtime_ns: int


def _regular(folder: Path) -> list[FolderFile]:
    found = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
            continue
        info = entry.stat(follow_symlinks=False)
        found.append(FolderFile(entry.name, Path(entry.path), info.st_size, info.st_mtime_ns))
    return found


async def settled_files(folder: Path) -> list[FolderFile]:
    """The folder's regular files that have stopped growing, in name order. An unreadable or
    missing folder raises OSError (temporary: a mount coming back is an outage)."""
    first = _regular(folder)
    now = time.time_ns()
    young = [f for f in first if now - f.mtime_ns < SETTLED_SECONDS * 1e9]
    if not young:
        return first
    await asyncio.sleep(LOOK_AGAIN_SECONDS)
    again = {f.name: f for f in _regular(folder)}
    return [f for f in first
            if f not in young or (again.get(f.name) is not None
                                  and (again[f.name].size, again[f.name].mtime_ns) == (f.size, f.mtime_ns))]


def read_whole(path: Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, without following a link, if it is still a regular file of a sane size.
    Raises ValueError (the file cannot be used: recorded with the reason) or OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path.name} is not a regular file any more")
        if info.st_size > max_bytes:
            raise ValueError(f"{path.name} is larger than {max_bytes // 2**20} MB")
        return handle.read(max_bytes + 1)


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
