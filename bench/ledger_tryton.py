"""How fast does a real Tryton take step 7's moves, and what does check-then-post cost?

    uv run python bench/ledger_tryton.py [--entries N]

Makes its own Tryton database (recon/ledger/tryton_setup.py, SQLite, in a temporary directory),
starts `trytond` on a free loopback port, and posts through recon's own adapter
(recon.ledger.tryton.TrytonLedger, JSON-RPC), in batches of `TrytonLedger.batch` as step 7 does
(one create, one look-up, one post per batch). Three passes of N entries each, on fresh keys where
it says so:

  post alone        N new moves: create + settle, no look-up first
  check then post   N new moves, each batch's keys looked up first (what step 7 does on Tryton)
  check, found      the same N keys looked up again: all there, nothing posted (a resumed run)

then two passes of --per-entry entries one at a time (the path before batches, and a refused
batch's fallback), and the ratio of batched to per-entry moves a second.

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


async def measure(ledger: TrytonLedger, n: int, per_entry: int) -> None:
    alone, checked = _entries("alone", n), _entries("checked", n)
    size = ledger.batch

    def batches(entries: list[Entry]):
        return [entries[i:i + size] for i in range(0, len(entries), size)]

    async def post_alone() -> None:
        for batch in batches(alone):
            await ledger.post_many(batch)

    async def check_then_post() -> None:
        for batch in batches(checked):
            held = await ledger.find([e.key for e in batch])
            new = [e for e in batch if not held[e.key]]
            if new:
                await ledger.post_many(new)

    async def check_found() -> None:
        for batch in batches(checked):
            held = await ledger.find([e.key for e in batch])
            assert all(len(held[e.key]) == 1 for e in batch)

    one_alone, one_checked = _entries("one-alone", per_entry), _entries("one-checked", per_entry)

    async def post_alone_per_entry() -> None:
        for entry in one_alone:
            await ledger.post(entry)

    async def check_then_post_per_entry() -> None:
        for entry in one_checked:
            if not (await ledger.find([entry.key]))[entry.key]:
                await ledger.post(entry)

    await ledger.find(["warm-up"])
    await ledger.post_many(_entries("warm-up", 40))  # the 40 suppliers' parties, made once
    print(f"Tryton {'with' if ledger.keyed else 'without'} recon_keys")
    print(f"batches of {size} (as step 7 pushes to Tryton):")
    plain = await _timed("post alone", n, post_alone)
    both = await _timed("check then post", n, check_then_post)
    await _timed("check, found", n, check_found)
    print(f"check-then-post / post alone: {both / plain:.2f}x")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if per_entry:
        print("one entry at a time (the path before batches; a refused batch's fallback):")
        one_plain = await _timed("post alone", per_entry, post_alone_per_entry)
        one_both = await _timed("check then post", per_entry, check_then_post_per_entry)
        print(f"batched / per entry, moves a second: post alone "
              f"{(n / plain) / (per_entry / one_plain):.1f}x, check then post "
              f"{(n / both) / (per_entry / one_both):.1f}x")
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--without-keys", action="store_true",
                        help="a Tryton without recon_keys (the lowest-id rule, not Tryton's key)")
    parser.add_argument("--per-entry", type=int, default=500,
                        help="entries in each one-at-a-time pass, for the ratio (0: none)")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, {args.entries} entries a pass, "
          f"{'without' if args.without_keys else 'with'} recon_keys, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    directory = Path(tempfile.mkdtemp(prefix="recon-bench-tryton-"))
    server = None
    try:
        subprocess.run([sys.executable, "-m", "recon.ledger.tryton_setup", str(directory), "2026",
                        *(["--without-keys"] if args.without_keys else [])],
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
        asyncio.run(measure(ledger, args.entries, args.per_entry))
    finally:
        if server is not None:
            server.terminate()
            server.wait(15)
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
