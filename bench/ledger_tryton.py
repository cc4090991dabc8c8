"""How fast does a real Tryton take step 7's moves, and what does check-then-post cost?

    uv run python bench/ledger_tryton.py [--entries N]

Makes its own Tryton database (recon/ledger/tryton_setup.py, SQLite, in a temporary directory),
starts `trytond` on a free loopback port, and posts through recon's own adapter
(recon.ledger.tryton.TrytonLedger, JSON-RPC), one entry at a time as step 7 does. Three passes of
N entries each, on fresh keys where it says so:

  post alone        N new moves: create + post, no look-up (what a key-enforcing ledger allows)
  check then post   N new moves, each looked up by its key first (what step 7 does on Tryton)
  check, found      the same N keys looked up again: all there, nothing posted (a resumed run)

Prints moves per second for each and the cost of the check (check-then-post / post alone). The
fence's own check is a Postgres round trip (~0.1 ms) and is not in these figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recon.ledger.port import Entry  # noqa: E402
from recon.ledger.tryton import TrytonLedger  # noqa: E402
from recon.ledger.tryton_setup import DATABASE, write_config  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402

DAY = date(2026, 10, 13)


def _entries(prefix: str, n: int) -> list[Entry]:
    return [Entry(f"bench-{prefix}:INV-{i}:1:price", 100 + i % 9_000, f"S{i % 40:03d}",
                  f"INV-{i}", 1, "price", DAY) for i in range(n)]


async def _timed(label: str, n: int, work) -> float:
    started = time.perf_counter()
    await work()
    seconds = time.perf_counter() - started
    print(f"{label:<16} {n:>7} entries  {seconds:8.1f} s  {n / seconds:8.1f} moves/s", flush=True)
    return seconds


async def measure(ledger: TrytonLedger, n: int) -> None:
    alone, checked = _entries("alone", n), _entries("checked", n)

    async def post_alone() -> None:
        for entry in alone:
            await ledger.post(entry)

    async def check_then_post() -> None:
        for entry in checked:
            if not (await ledger.find([entry.key]))[entry.key]:
                await ledger.post(entry)

    async def check_found() -> None:
        for entry in checked:
            assert len((await ledger.find([entry.key]))[entry.key]) == 1

    await ledger.find(["warm-up"])
    plain = await _timed("post alone", n, post_alone)
    both = await _timed("check then post", n, check_then_post)
    await _timed("check, found", n, check_found)
    print(f"check-then-post / post alone: {both / plain:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, {args.entries} entries a pass")
    directory = Path(tempfile.mkdtemp(prefix="recon-bench-tryton-"))
    server = None
    try:
        subprocess.run([sys.executable, "-m", "recon.ledger.tryton_setup", str(directory), "2026"],
                       check=True, cwd=ROOT, env={**os.environ, "RECON_LEDGER_SECRET": "bench-pw"},
                       stdout=subprocess.DEVNULL)
        port = free_port()
        write_config(directory, port)
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("trytond")), "-c", str(directory / "trytond.conf"),
             "-d", DATABASE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ledger = TrytonLedger(f"http://127.0.0.1:{port}/{DATABASE}", "admin", "bench-pw",
                              payable="AP", variance="PPV", journal="EXP", create_parties=True)
        for _ in range(100):
            try:
                asyncio.run(ledger.find([]))
                asyncio.run(ledger._prepare())
                break
            except OSError:
                time.sleep(0.2)
        asyncio.run(measure(ledger, args.entries))
    finally:
        if server is not None:
            server.terminate()
            server.wait(15)
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
