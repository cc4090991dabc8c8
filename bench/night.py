"""How long does a whole night take at scale, end to end, on the embedded stack.

    uv run python bench/night.py [--invoices N] [--mismatches M] [--repeats R] [--workers W]
                                 [--history K --history-invoices N] [--warehouses W] [--keep DIR]

Starts its own embedded Temporal dev server (in memory, free ports) and embedded PostgreSQL in a
temporary directory, applies the migrations, and for each of R nights (different dates, one stack):
seeds the night with `recon.tools.seed.seed_night`, vacuums the database and analyzes the master
data (a production night starts on settled tables; not counted), starts a real worker in this process on
a task queue of its own (or, with --workers W, W `recon worker` processes sharing that queue),
starts the run with `starter.start_night` and waits for its result. Then it reads the run's event
history and Postgres and prints:

  - seconds for seeding and for the run (wall, start to result), invoices per second of the run;
  - per step (activity type): wall seconds from its first ActivityTaskScheduled to its last
    ActivityTaskCompleted (event times from the history), how many activities, their mean time,
    and the CPU seconds spent meanwhile by the Python worker(s), the Temporal server and Postgres;
  - history events (Temporal warns at 10,240 and terminates at 51,200), history bytes, and the
    largest payload anywhere in the history (warns at 256 KB, fails at 2 MB);
  - model_calls / invoice_reads / ledger rows / distinct keys from Postgres, which must equal
    invoices / invoices / mismatches / mismatches (OK or MISMATCH);
  - the plain cost of the same work (bench/plain.py: parse every document in one process, COPY
    every row the run wrote into scratch tables) and `night/plain ratio: X.X`, run wall / plain.

With R > 1 it also prints the median of every number over the R nights. With --history K it first
runs K earlier nights of --history-invoices (default 10,000) on the same database, then the measured
night(s) on top, and prints each history night's seconds and `last vs first night: +x%` (a year of
nights must not make a night dearer), and with ten or more, the same of the medians of the first and
last five nights and of the least-squares line through every night. The nights run with
RECON_RECEIPT_GRACE_DAYS=0 unless set: every seeded short delivery is then claimed on its own night,
so each night's counts are checked as before. With --warehouses W each history date is
run for W warehouses (ldh, then w02, w03, ...), one real night each: `--history 30 --warehouses 20`
is a month of 20 warehouses' nights (the database the desk's page bench reads, bench/desk_pages.py).
The debit-note gate is opened wide for the bench so a
run never waits for a person; if one hands over anyway the bench stops with the note. With --keep
DIR the stack's data stays in DIR: start Postgres on it again
(`recon.runtime.embedded.EmbeddedPostgres(Path(DIR)).start()`) to read the night's rows or EXPLAIN
its statements; a rerun with the same --keep DIR adds its nights after the latest one there.

Its parts: one night (bench/night_run.py), the run's event history read (bench/night_events.py),
the measured nights printed (bench/night_report.py) and the history nights' trend with its fitted
line (bench/night_trend.py); bench/cpu.py samples CPU, bench/plain.py measures the plain cost.
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
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.night_report import show_median, show_night  # noqa: E402
from bench.night_run import WAREHOUSE, Night, quiet_night_environment, run_night  # noqa: E402
from bench.night_trend import show_history  # noqa: E402
from recon.runtime.devstack import embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402

FIRST_DATE = date(2031, 1, 1)


async def _first_free_date(pool) -> date:
    """The first night to seed: FIRST_DATE on a fresh database, else the day after the latest
    night a kept one (--keep DIR) already holds, so a rerun on kept data adds nights on top."""
    latest = await pool.fetchval("SELECT max(business_date) FROM invoices WHERE warehouse = $1",
                                 WAREHOUSE)
    return FIRST_DATE if latest is None else max(FIRST_DATE, latest + timedelta(days=1))


# ------------------------------------------------------------------ main
def _code_version() -> str:
    """The commit measured (numbers are only comparable on the same code), `+dirty` if edited."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


async def run(args: argparse.Namespace) -> int:
    state = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="recon-bench-night-"))
    state.mkdir(parents=True, exist_ok=True)
    nights: list[Night] = []
    history: list[Night] = []
    codec_ops: dict[str, float] | None = None
    port, ui_port = free_port(), free_port()
    print(f"starting embedded Temporal (:{port}, in memory) and Postgres in {state} ...", flush=True)
    try:
        with embedded_stack(state, port=port, ui_port=ui_port, persistent=False) as stack:
            pool = await connect_pool(stack.postgres.url, max_size=4)
            try:
                await migrate(pool)
                client = await connect(stack.settings())
                print(f"code {_code_version()}, python {platform.python_version()}, {os.cpu_count()} CPUs, "
                      f"server {await pool.fetchval('SHOW server_version')}; "
                      f"{args.invoices:,} invoices, {args.mismatches:,} mismatches, "
                      f"{args.repeats} night(s)", flush=True)
                keyring = stack.settings().payload_keyring
                print("payloads " + (f"encrypted (AES-GCM, key {keyring.current_id})" if keyring
                                     else "not encrypted (no RECON_PAYLOAD_KEYS)"), flush=True)
                codec_ops = count_codec_ops() if keyring and args.workers == 0 else None
                first = await _first_free_date(pool)
                for h in range(args.history):
                    day = (first + timedelta(days=h)).isoformat()
                    print(f"history night {h + 1} of {args.history}:", flush=True)
                    for w in range(args.warehouses):
                        history.append(await run_night(
                            stack, client, pool, day, args.history_invoices,
                            args.history_mismatches, args.seed, args.progress_every, args.workers,
                            args.format, WAREHOUSE if w == 0 else f"w{w + 1:02d}"))
                for r in range(args.repeats):
                    day = (first + timedelta(days=args.history + r)).isoformat()
                    nights.append(await run_night(stack, client, pool, day, args.invoices,
                                                  args.mismatches, args.seed, args.progress_every,
                                                  args.workers, args.format))
            finally:
                await pool.close()
    finally:
        if not args.keep:
            shutil.rmtree(state, ignore_errors=True)

    if history:
        show_history(history)
    for n in nights:
        show_night(n)
    if codec_ops is not None:  # the client and the worker both ran in this process
        print(f"codec (this process, {len(nights)} night(s)): {codec_ops['seal']:,} payloads sealed, "
              f"{codec_ops['open']:,} opened, {codec_ops['seconds'] * 1e3:.1f} ms in the codec")
    if len(nights) > 1:
        show_median(nights)
    return 0 if all(n.ok for n in nights + history) else 1


def count_codec_ops() -> dict[str, float]:
    """Count and time every seal and open of this process (the bench's client and its in-process
    worker): what encryption costs a night, measured rather than estimated."""
    from recon.runtime.codec import PayloadCipher

    ops: dict[str, float] = {"seal": 0, "open": 0, "seconds": 0.0}
    for name in ("seal", "open"):
        original = getattr(PayloadCipher, name)

        def timed(self, payload, _original=original, _name=name):
            started = time.perf_counter()
            try:
                return _original(self, payload)
            finally:
                ops["seconds"] += time.perf_counter() - started
                ops[_name] += 1

        setattr(PayloadCipher, name, timed)
    return ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--invoices", type=int, default=10_000, help="invoices per night")
    parser.add_argument("--mismatches", type=int, default=500, help="adjustments seeded per night")
    parser.add_argument("--repeats", type=int, default=1, help="independent nights (different dates)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated nights")
    parser.add_argument("--history", type=int, default=0, metavar="K",
                        help="earlier nights run on the same database before the measured one(s)")
    parser.add_argument("--history-invoices", type=int, default=10_000,
                        help="invoices per history night")
    parser.add_argument("--history-mismatches", type=int, default=None,
                        help="adjustments per history night (default: a twentieth)")
    parser.add_argument("--warehouses", type=int, default=1, metavar="W",
                        help="warehouses whose nights each history date runs (ldh, w02, ...)")
    parser.add_argument("--format", default="text",
                        help="the nights' documents: text, ubl, gst, cii, facturx, pdf or mixed")
    parser.add_argument("--workers", type=int, default=0,
                        help="worker processes sharing the night (0: one worker in this process)")
    parser.add_argument("--progress-every", type=float, default=30.0,
                        help="seconds between progress lines on stderr")
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="keep the stack's data in DIR (Postgres can be started on it again to "
                             "read the night's rows or EXPLAIN its statements)")
    args = parser.parse_args()
    if args.history_mismatches is None:
        args.history_mismatches = args.history_invoices // 20
    if min(args.invoices, args.repeats, args.history_invoices, args.warehouses) < 1 \
            or min(args.mismatches, args.workers, args.history, args.history_mismatches) < 0 \
            or args.progress_every <= 0:
        parser.error("--invoices, --repeats, --history-invoices and --warehouses must be at least 1; "
                     "--mismatches, --workers, --history and --history-mismatches at least 0")
    if args.history_mismatches > args.history_invoices or args.mismatches > args.invoices:
        parser.error("--mismatches (and --history-mismatches) cannot exceed the night's invoices")
    quiet_night_environment()
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
