"""Debian's PostgreSQL server (`apt-get install postgresql`) as the tests and benches start it:
its newest installed binaries, and commands run as the `postgres` user (initdb and the server
refuse root). Shared by Tryton over PostgreSQL (tests/tryton_pg.py) and the production-like
bench stack (bench/production_stack.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def server_bin() -> Path | None:
    """The newest Debian PostgreSQL's server binaries, or None when the package is missing."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return found[-1].parent if found else None


def as_postgres(*command: str) -> subprocess.CompletedProcess:
    """Run a server command as the `postgres` user when we are root, as ourselves otherwise."""
    run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*run_as, *command], check=True, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
