"""How fast does a real Tryton take step 7's moves, and what does check-then-post cost?

    uv run python bench/ledger_tryton.py [--entries N] [--postgresql]

Makes its own Tryton database (recon/ledger/tryton_setup.py, SQLite, in a temporary directory; with
--postgresql in a throwaway cluster of Debian's `postgresql`, as tests/tryton_pg.py makes it),
starts `trytond` on a free loopback port, and posts through recon's own adapter
(recon.ledger.tryton.TrytonLedger, JSON-RPC), in batches of `TrytonLedger.batch` as step 7 does
(one create, one look-up, one post per batch). Three passes of N entries each, on fresh keys where
it says so:

  post alone        N new moves: create + settle, no look-up first
  check then post   N new moves, each batch's keys looked up first (what step 7 does on Tryton)
  check, found      the same N keys looked up again: all there, nothing posted (a resumed run)

then two passes of --per-entry entries one at a time (the path before batches, and a refused
batch's fallback), and the ratio of batched to per-entry moves a second.

Prints moves per second for each (and per CPU second of Tryton's own processes: trytond, and on
PostgreSQL its server's backends, a figure the machine's load does not move) and the cost of the
check (check-then-post / post alone). The
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


# The processes doing Tryton's work (trytond, and on PostgreSQL the server's backends for its
# database), found by `_serving`: their CPU time per pass is what the machine's load does not move,
# where the wall-clock figure on a shared machine is mostly other people's work.
_serving: list[str] = []


def _tryton_cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by every process whose command line holds one of
    `_serving`'s words (Linux /proc; 0 elsewhere)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if not any(word in cmdline for word in _serving):
                continue
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return total


async def _timed(label: str, n: int, work) -> float:
    cpu = _tryton_cpu_seconds()
    started = time.perf_counter()
    await work()
    seconds = time.perf_counter() - started
    cpu = _tryton_cpu_seconds() - cpu
    per_cpu = f"  {n / cpu:8.1f} moves per Tryton CPU second" if cpu > 0 else ""
    print(f"{label:<16} {n:>7} entries  {seconds:8.1f} s  {n / seconds:8.1f} moves/s{per_cpu}",
          flush=True)
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
    parser.add_argument("--postgresql", action="store_true",
                        help="Tryton over Debian's PostgreSQL (a throwaway cluster) instead of SQLite")
    parser.add_argument("--per-entry", type=int, default=500,
                        help="entries in each one-at-a-time pass, for the ratio (0: none)")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, {args.entries} entries a pass, "
          f"{'without' if args.without_keys else 'with'} recon_keys, Tryton over "
          f"{'PostgreSQL' if args.postgresql else 'SQLite'}, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    directory = Path(tempfile.mkdtemp(prefix="recon-bench-tryton-"))
    server = cluster = None
    database = DATABASE
    try:
        port = free_port()
        if args.postgresql:
            from tests.tryton import ADMIN_PASSWORD
            from tests.tryton_pg import TrytonCluster

            cluster = TrytonCluster.start()
            database = cluster.build("bench", directory, keys=not args.without_keys)
            write_config(directory, port, uri=cluster.uri)
            password = ADMIN_PASSWORD  # what cluster.build gives Tryton's admin
        else:
            subprocess.run([sys.executable, "-m", "recon.ledger.tryton_setup", str(directory),
                            "2026", *(["--without-keys"] if args.without_keys else [])],
                           check=True, cwd=ROOT, env={**os.environ, "RECON_LEDGER_SECRET": "bench-pw"},
                           stdout=subprocess.DEVNULL)
            write_config(directory, port)
            password = "bench-pw"
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("trytond")), "-c", str(directory / "trytond.conf"),
             "-d", database], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _serving.append(str(directory / "trytond.conf"))
        if cluster is not None:
            _serving.append(f"postgres: tryton {database} ")
        ledger = TrytonLedger(f"http://127.0.0.1:{port}/{database}", "admin", password,
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
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
