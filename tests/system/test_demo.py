"""`recon demo`, the first command a newcomer runs (README "Two commands"): its crash story on
stdout reads with consistent numbers, and its JSON logs go to the file it names, not the
terminal."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.helpers import recon_cli

pytestmark = pytest.mark.slow


async def test_the_demo_tells_one_consistent_story_and_keeps_its_logs_in_a_file(
        stack, place: Path) -> None:
    env = {k: v for k, v in stack.env(RECON_HOME=str(place / "home")).items()
           if k not in ("DATABASE_URL", "TEMPORAL_ADDRESS")}  # the demo makes its own stack
    done = await asyncio.to_thread(recon_cli, env, "demo", "--exit", timeout=600)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    out = done.stdout
    assert done.stderr == "", done.stderr[-3000:]
    log = place / "home" / "demo" / "demo.log"
    assert f"logs: {log}" in out, out
    assert log.stat().st_size > 0 and all(
        line.startswith("{") for line in log.read_text().splitlines()), "JSON lines"
    died = re.search(r"exited hard \(code 137\) with (\d+) entries committed", out)
    assert died, out
    committed = int(died.group(1))
    assert 0 < committed < 24 and committed % 5 == 0, out  # batches of 5; entry 24's rolled back
    story = " ".join(out.split())  # rich folds long lines
    assert (f"worker killed at entry 24 with {committed} committed; attempt 2 resumed at entry "
            f"{committed + 1}") in story, out
    assert f"posted {40 - committed} new from entry {committed + 1}: 0 posted twice." in story, out
    assert "ledger rows: 40, distinct keys: 40" in out, out
    assert "model calls: 312 (invoices: 312, not 624)" in out, out
