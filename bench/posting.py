"""How fast does the ledger take entries: one row per transaction against batched posting.

    uv run python bench/posting.py [--entries N] [--one-row-entries M] [--batch B] [--repeats R]

Starts its own embedded PostgreSQL in a temporary directory (nothing shared with `recon dev`),
applies the migrations, and posts through the real `recon.store.ledger.post_entries` with a real fence
(`take_fence` once per run, as step 7 does). Four measurements, each repeated R times on fresh
keys:

  one-row  fresh     M new entries, one `post_entries` call (one transaction) per entry
  one-row  conflict  the same M entries again: every key already exists, nothing is written
  batched  fresh     N new entries, B per `post_entries` call
  batched  conflict  the same N entries again, B per call

Prints median, min and max entries per second and the batched / one-row ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recon.domain.keys import adjustment_key, fence_scope
from recon.runtime.embedded import EmbeddedPostgres  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.store.fences import take_fence  # noqa: E402
from recon.store.ledger import LedgerEntry, post_entries  # noqa: E402


def make_entries(workflow_id: str, n: int) -> list[LedgerEntry]:
    out = []
    for i in range(n):
        invoice = f"INV-{i // 20:06d}"
        line = i % 20 + 1
        kind = "qty" if i % 2 else "price"
        out.append(LedgerEntry(
            reference=adjustment_key(workflow_id, invoice, line, kind),
            workflow_id=workflow_id,
            invoice_no=invoice,
            supplier_id=f"SUP-{i % 17:02d}",
            line_no=line,
            kind=kind,
            amount_paise=-(100 + i % 9973),
            memo="bench adjustment",
        ))
    return out


async def post_all(pool: asyncpg.Pool, entries: list[LedgerEntry], batch: int, expect_new: int) -> float:
    """Seconds to post `entries` in calls of `batch`, fence taken once at the start."""
    workflow_id = entries[0].workflow_id
    async with pool.acquire() as conn:
        started = time.perf_counter()
        fence = await take_fence(pool, fence_scope(workflow_id, "ledger"))
        new = 0
        for i in range(0, len(entries), batch):
            new += await post_entries(conn, entries[i:i + batch], fence)
        elapsed = time.perf_counter() - started
    if new != expect_new:
        raise SystemExit(f"bench bug: expected {expect_new} new rows, got {new}")
    return elapsed


async def measure(pool: asyncpg.Pool, n: int, batch: int, repeats: int, label: str) -> dict[str, list[float]]:
    rates: dict[str, list[float]] = {"fresh": [], "conflict": []}
    for r in range(repeats):
        entries = make_entries(f"bench-{label}-{r}-{uuid.uuid4().hex[:8]}", n)
        rates["fresh"].append(n / await post_all(pool, entries, batch, expect_new=n))
        rates["conflict"].append(n / await post_all(pool, entries, batch, expect_new=0))
        print(f"  {label:8} repeat {r + 1}/{repeats}: fresh {rates['fresh'][-1]:>9,.0f}/s, "
              f"conflict {rates['conflict'][-1]:>9,.0f}/s", flush=True)
    return rates


async def run(args: argparse.Namespace) -> None:
    state = Path(tempfile.mkdtemp(prefix="recon-bench-"))
    postgres = EmbeddedPostgres(state)
    try:
        print(f"starting embedded Postgres in {state} ...", flush=True)
        url = postgres.start()
        pool = await connect_pool(url, max_size=2)
        try:
            await migrate(pool)
            settings = {
                name: await pool.fetchval(f"SHOW {name}")
                for name in ("server_version", "fsync", "synchronous_commit", "wal_sync_method",
                             "shared_buffers")
            }
            print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, "
                  + ", ".join(f"{k}={v}" for k, v in settings.items()))
            print(f"one-row: {args.one_row_entries:,} entries x 1 per transaction; "
                  f"batched: {args.entries:,} entries x {args.batch} per transaction; "
                  f"{args.repeats} repeats each", flush=True)

            one_row = await measure(pool, args.one_row_entries, 1, args.repeats, "one-row")
            batched = await measure(pool, args.entries, args.batch, args.repeats, "batched")
        finally:
            await pool.close()
    finally:
        postgres.stop()
        shutil.rmtree(state, ignore_errors=True)

    print()
    print(f"{'entries per second':<28}{'median':>12}{'min':>12}{'max':>12}")
    for label, rates in (("one-row", one_row), (f"batched ({args.batch})", batched)):
        for mode in ("fresh", "conflict"):
            xs = rates[mode]
            print(f"{label + ' ' + mode:<28}{statistics.median(xs):>12,.0f}{min(xs):>12,.0f}"
                  f"{max(xs):>12,.0f}")
    print()
    for mode in ("fresh", "conflict"):
        ratio = statistics.median(batched[mode]) / statistics.median(one_row[mode])
        print(f"batched / one-row, {mode + ':':<10} {ratio:6.1f}x (ratio of medians)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=20_000, help="entries per batched run")
    parser.add_argument("--one-row-entries", type=int, default=2_000,
                        help="entries per one-row-per-transaction run")
    parser.add_argument("--batch", type=int, default=500, help="entries per transaction when batched")
    parser.add_argument("--repeats", type=int, default=5, help="runs per measurement")
    args = parser.parse_args()
    if min(args.entries, args.one_row_entries, args.batch, args.repeats) < 1:
        parser.error("all counts must be at least 1")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
