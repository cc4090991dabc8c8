"""The worker's build id: which code it runs, named without compiling every module again.

Temporal records a worker's build id with the workflow tasks it completes (recon uses no
versioning by build id: it only names the code in a history). Unless given one, the SDK makes it
by asking every loaded module's loader for its code: where no bytecode files are written
(`PYTHONDONTWRITEBYTECODE`, as recon's CI and benches run) that compiles every module of the
process from source a second time, ~1.3 s of CPU at each worker start, which is also in the
time a replacement worker takes to pick up a lost one's night. Here: a digest of recon's own
source files (what a deployment changes) and the versions of the interpreter and of the
libraries that run workflow code (what `uv.lock` changes), read in a few milliseconds.
"""

from __future__ import annotations

import hashlib
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The code a worker runs: its packages and its entry point (recon/cli, desk, ... included).
SOURCES = ("recon", "workflows", "activities", "worker.py")
LIBRARIES = ("temporalio", "pydantic", "pydantic-core", "protobuf")


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "-"


def build_id(root: Path = ROOT) -> str:
    """Hex digest of the sources under `root` and the libraries' versions: the same code gives
    the same id, any changed, added or removed source file another."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"python {sys.version}\n".encode())
    for name in LIBRARIES:
        digest.update(f"{name} {_version(name)}\n".encode())
    for source in SOURCES:
        at = root / source
        files = sorted(at.rglob("*.py")) if at.is_dir() else [at] if at.is_file() else []
        for path in files:
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return f"recon-{digest.hexdigest()}"
