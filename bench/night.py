"""How long does a whole night take at scale, end to end, on the embedded stack.

    uv run python bench/night.py [--invoices N] [--mismatches M] [--repeats R] [--workers W]
                                 [--history K --history-invoices N] [--keep DIR]

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
so each night's counts are checked as before. The debit-note gate is opened wide for the bench so a
run never waits for a person; if one hands over anyway the bench stops with the note. With --keep
DIR the stack's data stays in DIR: start Postgres on it again
(`recon.runtime.embedded.EmbeddedPostgres(Path(DIR)).start()`) to read the night's rows or EXPLAIN
its statements; a rerun with the same --keep DIR adds its nights after the latest one there.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path

import structlog

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from temporalio.api.common.v1 import Payload  # noqa: E402
from temporalio.api.enums.v1 import EventType  # noqa: E402
from temporalio.client import Client, WorkflowHandle  # noqa: E402
from temporalio.common import SearchAttributeKey  # noqa: E402

from bench.cpu import CpuSampler, postmaster_pid, process_cpu, tree_cpu  # noqa: E402
from bench.plain import Plain, plain_cost  # noqa: E402
from recon.domain.keys import workflow_id_for  # noqa: E402
from recon.domain.money import rupees  # noqa: E402
from recon.domain.steps import STEPS  # noqa: E402
from recon.runtime.config import MAX_PAISE  # noqa: E402
from recon.runtime.devstack import RunningStack, embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.keyring import keyring_env  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402

WAREHOUSE = "ldh"
FIRST_DATE = date(2031, 1, 1)
EDGE_NIGHTS = 5  # history nights at each end of a run whose medians are compared
HISTORY_WARN, HISTORY_LIMIT = 10_240, 51_200
PAYLOAD_WARN = 256 * 1024
RECON_STATUS = SearchAttributeKey.for_keyword("ReconStatus")
MASTER_TABLES = ("suppliers", "purchase_orders", "po_lines", "goods_receipts", "invoices", "stock_levels")

_COUNTS = """
SELECT
  (SELECT count(*) FROM model_calls WHERE workflow_id = $1) AS model_calls,
  (SELECT count(*) FROM invoice_reads WHERE workflow_id = $1) AS invoice_reads,
  (SELECT count(*) FROM ledger_entries WHERE workflow_id = $1) AS ledger_rows,
  (SELECT count(DISTINCT reference) FROM ledger_entries WHERE workflow_id = $1) AS distinct_keys,
  (SELECT count(*) FROM mismatches WHERE workflow_id = $1) AS mismatches_flagged,
  (SELECT count(*) FROM parked_items WHERE workflow_id = $1) AS parked
"""


# ------------------------------------------------------------------ reading the history
@dataclass
class StepTiming:
    name: str
    activities: int = 0
    first_scheduled: float | None = None
    last_completed: float | None = None
    busy: float = 0.0  # sum over its activities of scheduled -> completed
    attempts_max: int = 0

    @property
    def wall(self) -> float:
        if self.first_scheduled is None or self.last_completed is None:
            return float("nan")
        return self.last_completed - self.first_scheduled


@dataclass
class HistoryReport:
    events: int = 0
    history_bytes: int = 0
    largest_payload: int = 0
    largest_where: str = ""
    steps: dict[str, StepTiming] = field(default_factory=dict)
    first_event: float = 0.0
    last_event: float = 0.0


def _payload_sizes(message, path: str = ""):
    """Every Payload anywhere inside a protobuf message: (size in bytes, field path)."""
    for desc, value in message.ListFields():
        if desc.message_type is None:
            continue
        repeated = desc.is_repeated if hasattr(desc, "is_repeated") else desc.label == desc.LABEL_REPEATED
        items = value.values() if desc.message_type.GetOptions().map_entry else (
            value if repeated else [value])
        for item in items:
            where = f"{path}.{desc.name}" if path else desc.name
            if isinstance(item, Payload):
                yield item.ByteSize(), where
            elif hasattr(item, "ListFields"):
                yield from _payload_sizes(item, where)


async def read_history(handle: WorkflowHandle) -> HistoryReport:
    report = HistoryReport()
    history = await handle.fetch_history()
    scheduled: dict[int, tuple[str, float]] = {}
    for event in history.events:
        report.events += 1
        report.history_bytes += event.ByteSize()
        at = event.event_time.ToDatetime().timestamp()
        if report.events == 1:
            report.first_event = at
        report.last_event = at
        for size, where in _payload_sizes(event):
            if size > report.largest_payload:
                activity = ""
                if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                    activity = f" ({event.activity_task_scheduled_event_attributes.activity_type.name})"
                elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                    sid = event.activity_task_completed_event_attributes.scheduled_event_id
                    activity = f" ({scheduled.get(sid, ('?', 0))[0]})"
                report.largest_payload = size
                report.largest_where = f"event {event.event_id} {where}{activity}"
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = (name, at)
            step = report.steps.setdefault(name, StepTiming(name))
            step.activities += 1
            if step.first_scheduled is None:
                step.first_scheduled = at
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            step = report.steps[scheduled[attrs.scheduled_event_id][0]]
            step.attempts_max = max(step.attempts_max, attrs.attempt)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            name, when = scheduled[attrs.scheduled_event_id]
            step = report.steps[name]
            step.last_completed = at
            step.busy += at - when
    return report


# ------------------------------------------------------------------ one night
@dataclass
class Night:
    day: str
    invoices: int
    mismatches: int
    seed_seconds: float
    run_seconds: float
    history: HistoryReport
    counts: dict[str, int]
    cpu: CpuSampler
    run_started: float
    run_ended: float
    plain: Plain
    workers: int
    blocks: int  # Postgres blocks read or hit during the run (pg_stat_database)

    @property
    def ratio(self) -> float:
        return self.run_seconds / self.plain.seconds

    @property
    def per_second(self) -> float:
        return self.invoices / self.run_seconds

    @property
    def checks(self) -> dict[str, tuple[int, int]]:
        return {
            "model_calls": (self.counts["model_calls"], self.invoices),
            "invoice_reads": (self.counts["invoice_reads"], self.invoices),
            "ledger_rows": (self.counts["ledger_rows"], self.mismatches),
            "distinct_keys": (self.counts["distinct_keys"], self.mismatches),
        }

    @property
    def ok(self) -> bool:
        return all(got == want for got, want in self.checks.values())


async def _watch(client: Client, handle: WorkflowHandle, started: float, every: float) -> None:
    """Progress lines on stderr for long nights; stop the bench if the run waits for a person."""
    while True:
        await asyncio.sleep(every)
        try:
            progress = await handle.query("progress")
        except Exception as exc:  # a query can time out while the worker is busy: just say so
            print(f"  [{time.perf_counter() - started:7.0f} s] (progress query failed: {exc})",
                  file=sys.stderr, flush=True)
            continue
        print(f"  [{time.perf_counter() - started:7.0f} s] step {progress.get('current_step')}, "
              f"extracted {progress.get('extracted', 0):,}, parked {progress.get('parked', 0):,}",
              file=sys.stderr, flush=True)
        if progress.get("status") == "AwaitingDecision":
            note = await handle.query("pending_handover")
            raise SystemExit(f"the run handed over to a person, the bench cannot go on: {note}")


async def run_night(stack: RunningStack, client: Client, pool, day: str, invoices: int,
                    mismatches: int, seed: int, watch_every: float, workers: int,
                    documents: str = "text") -> Night:
    from starter import start_night

    started = time.perf_counter()
    seeded = await seed_night(pool, day, WAREHOUSE, invoices, mismatches, seed, documents)
    seed_seconds = time.perf_counter() - started
    if len(seeded.adjustments) != mismatches:
        raise SystemExit(f"bench bug: seeded {len(seeded.adjustments)} adjustments, not {mismatches}")
    print(f"  {day}: seeded {invoices:,} invoices ({mismatches:,} adjustments due, "
          f"{len(seeded.unreadable)} unreadable, {len(seeded.no_po_invoices)} citing no PO, "
          f"{len(seeded.unknown_sku_lines)} unknown SKUs) in {seed_seconds:.1f} s", flush=True)
    # A production night starts on settled tables: the master data was loaded during the day and
    # long vacuumed and analyzed, and autovacuum has had the day to pass over the last night's
    # rows. Back to back, a freshly seeded night would have autovacuum's first pass over ~700 MB
    # of new rows, and its pass over the earlier nights' working rows, land in the middle of the
    # night it measures (seen on a month of history: step 8 of the 100k night at 14.9 s while
    # autovacuum ran over seven working tables). Likewise the day's checkpoints (every 15 min) have
    # written the last night's pages out; back to back, they would still be dirty in the buffers,
    # and the measured night's backends would write them themselves to make room (docs/design.md
    # §8). Not counted in the night's time; what the measured night's own rows make autovacuum and
    # the checkpointer do during it still counts.
    started = time.perf_counter()
    await pool.execute(f"VACUUM (ANALYZE) {', '.join(MASTER_TABLES)}")
    await pool.execute("VACUUM")
    await pool.execute("CHECKPOINT")
    blocks_before = await database_blocks(pool)
    print(f"  {day}: tables vacuumed, master data analyzed in {time.perf_counter() - started:.1f} s "
          "(as a production database is at the start of a night)", flush=True)

    settings = replace(
        stack.settings(),
        task_queue=f"bench-night-{uuid.uuid4().hex[:8]}",
        warehouse=WAREHOUSE,
        openai_api_key=None, openai_base_url=None, failpoints="",  # the offline extractor
        gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0, gate_max_total_paise=MAX_PAISE,
        gate_max_supplier_paise=MAX_PAISE,  # never hand over at the gate
    )
    async with serving(stack, settings, workers) as python_cpu:
        sampler = CpuSampler(python=python_cpu,
                             temporal=lambda: process_cpu(stack.temporal.process.pid),
                             postgres=lambda: tree_cpu(postmaster_pid(str(stack.postgres.datadir))))
        with sampler:
            run_started = time.time()
            started = time.perf_counter()
            handle = await start_night(client, settings, day, WAREHOUSE)
            watcher = asyncio.create_task(_watch(client, handle, started, watch_every))
            result_task = asyncio.ensure_future(handle.result())
            try:
                done, _ = await asyncio.wait({result_task, watcher},
                                             return_when=asyncio.FIRST_COMPLETED)
                if watcher in done:
                    result_task.cancel()
                    watcher.result()  # raises SystemExit with the handover note
                result = result_task.result()
            finally:
                watcher.cancel()
            run_seconds = time.perf_counter() - started
            run_ended = time.time()
    blocks = await database_blocks(pool) - blocks_before  # the worker's backends have exited
    print(f"  {day}: run {result.status} in {run_seconds:.1f} s ({result.invoices:,} invoices, "
          f"{result.parked:,} parked, {result.mismatches:,} mismatches, "
          f"{rupees(result.adjustment_total_paise)} adjusted, "
          f"{result.debit_notes} debit notes)", flush=True)
    history = await read_history(handle)
    counts = dict(await pool.fetchrow(_COUNTS, handle.id))
    plain = await plain_cost(pool, handle.id)
    return Night(day, invoices, mismatches, seed_seconds, run_seconds, history, counts, sampler,
                 run_started, run_ended, plain, workers, blocks)


async def database_blocks(pool) -> int:
    """Blocks every backend has read or found in the buffers so far (`pg_stat_database`): the
    night's Postgres work in a unit no other load on the machine changes. A backend reports its
    counts when it is idle, at most once a second, or when it exits; the bench's own connections
    are made to report theirs first (the seed's and the vacuum's blocks are not the night's)."""
    conns = [await pool.acquire() for _ in range(pool.get_size())]
    try:
        for conn in conns:
            await conn.execute("SELECT pg_stat_force_next_flush()")
            await conn.execute("SELECT 1")
        return int(await conns[0].fetchval(
            "SELECT blks_hit + blks_read FROM pg_stat_database WHERE datname = current_database()"))
    finally:
        for conn in conns:
            await pool.release(conn)


@contextlib.asynccontextmanager
async def serving(stack: RunningStack, settings, workers: int) -> AsyncIterator[Callable[[], float]]:
    """Workers on the night's task queue while the run lasts; yields how to read their CPU
    seconds. 0 workers: one worker in this process (its CPU is this process's)."""
    if workers == 0:
        from worker import run_worker

        ready, stop = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(run_worker(settings, ready=ready, stop=stop))
        try:
            await asyncio.wait_for(ready.wait(), 60)
            yield lambda: sum(os.times()[:2])
        finally:
            stop.set()
            await asyncio.wait_for(task, 60)
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "OPENAI_"))}
    env.update(TEMPORAL_ADDRESS=stack.temporal.address, DATABASE_URL=stack.postgres.url,
               RECON_TASK_QUEUE=settings.task_queue, PYTHONUNBUFFERED="1",
               RECON_RECEIPT_GRACE_DAYS=os.environ.get("RECON_RECEIPT_GRACE_DAYS", "0"))
    env.update(keyring_env(settings.payload_keyring, settings.payload_keys_file))  # same keys
    logs = [stack.temporal.state / f"worker-{settings.task_queue}-{n}.log" for n in range(workers)]
    procs = [subprocess.Popen([sys.executable, "-m", "recon.cli", "worker"], cwd=ROOT, env=env,
                              stdout=log.open("wb"), stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL) for log in logs]
    try:
        deadline = time.monotonic() + 60
        while not all("worker started" in log.read_text(errors="replace") for log in logs):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise SystemExit(f"a worker did not start; see {logs}")
            await asyncio.sleep(0.05)
        yield lambda: sum(process_cpu(p.pid) for p in procs)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


# ------------------------------------------------------------------ printing
def _order(names) -> list[str]:
    known = [n for n in STEPS if n in names]
    return known + sorted(n for n in names if n not in STEPS)


def show_night(n: Night) -> None:
    h = n.history
    print(f"\nnight {n.day} ({workflow_id_for(n.day, WAREHOUSE)})")
    print(f"  invoices                 {n.invoices:>12,}")
    print(f"  seed seconds             {n.seed_seconds:>12.2f}")
    print(f"  run seconds (wall)       {n.run_seconds:>12.2f}")
    print(f"  postgres blocks          {n.blocks:>12,}  (read or hit during the run)")
    print(f"  invoices per second      {n.per_second:>12,.1f}")
    workers = "1 in the bench process" if n.workers == 0 else f"{n.workers} processes"
    print(f"  workers                  {workers:>12}")
    print(f"  {'step':<24}{'wall s':>10}{'share':>8}{'acts':>7}{'mean act s':>12}{'max try':>9}"
          f"{'cpu py':>9}{'cpu tmp':>9}{'cpu pg':>9}")
    for name in _order(h.steps):
        s = h.steps[name]
        mean = s.busy / s.activities if s.activities else 0.0
        py, tmp, pg = n.cpu.between(s.first_scheduled or 0.0, s.last_completed or 0.0)
        print(f"  {name:<24}{s.wall:>10.2f}{s.wall / n.run_seconds:>8.1%}{s.activities:>7}"
              f"{mean:>12.2f}{s.attempts_max:>9}{py:>9.2f}{tmp:>9.2f}{pg:>9.2f}")
    py, tmp, pg = n.cpu.between(n.run_started, n.run_ended)
    print(f"  {'(whole run)':<24}{n.run_seconds:>10.2f}{'':>36}{py:>9.2f}{tmp:>9.2f}{pg:>9.2f}")
    steps_sum = sum(s.wall for s in h.steps.values())
    span = h.last_event - h.first_event
    print(f"  {'(sum of steps)':<24}{steps_sum:>10.2f}{steps_sum / n.run_seconds:>8.1%}")
    print(f"  {'(history first..last)':<24}{span:>10.2f}   between steps: {span - steps_sum:.2f} s")
    warn = "over the warning" if h.events > HISTORY_WARN else "under the warning"
    print(f"  history events           {h.events:>12,}  ({warn} of {HISTORY_WARN:,}; "
          f"limit {HISTORY_LIMIT:,})")
    print(f"  history bytes            {h.history_bytes:>12,}")
    flag = "over 256 KB warning" if h.largest_payload > PAYLOAD_WARN else "ok"
    print(f"  largest payload bytes    {h.largest_payload:>12,}  ({flag}; {h.largest_where})")
    for label, (got, want) in n.checks.items():
        verdict = "OK" if got == want else "MISMATCH"
        print(f"  {label:<24} {got:>12,}  expected {want:,}: {verdict}")
    print(f"  (mismatches flagged {n.counts['mismatches_flagged']:,}, parked items "
          f"{n.counts['parked']:,})")
    p = n.plain
    print(f"  plain: parse {p.documents:,} documents {p.parse_seconds:.2f} s, COPY {p.rows:,} rows "
          f"{p.copy_seconds:.2f} s, together {p.seconds:.2f} s")
    print(f"night/plain ratio: {n.ratio:.1f}")


def show_median(nights: list[Night]) -> None:
    def med(xs) -> float:
        return statistics.median(xs)

    print(f"\nmedian of {len(nights)} nights ({', '.join(n.day for n in nights)})")
    print(f"  {'':<24}{'median':>12}{'min':>12}{'max':>12}")
    for label, xs in (("history events", [n.history.events for n in nights]),
                      ("largest payload bytes", [n.history.largest_payload for n in nights])):
        print(f"  {label:<24}{med(xs):>12,.0f}{min(xs):>12,}{max(xs):>12,}")
    rows = [
        ("seed seconds", [n.seed_seconds for n in nights]),
        ("run seconds (wall)", [n.run_seconds for n in nights]),
        ("invoices per second", [n.per_second for n in nights]),
        ("plain seconds", [n.plain.seconds for n in nights]),
        ("night/plain ratio", [n.ratio for n in nights]),
    ]
    names = _order({name for n in nights for name in n.history.steps})
    rows += [(f"step {name}", [n.history.steps[name].wall for n in nights
                               if name in n.history.steps]) for name in names]
    for label, xs in rows:
        print(f"  {label:<24}{med(xs):>12,.2f}{min(xs):>12,.2f}{max(xs):>12,.2f}")
    bad = [n.day for n in nights if not n.ok]
    print(f"  counts: {'OK on every night' if not bad else 'MISMATCH on ' + ', '.join(bad)}")


def show_history(history: list[Night]) -> None:
    """The earlier nights, one line each, and how much dearer the last was than the first: the
    nights measured on top of them are only fair if history does not slow a night down."""
    print(f"\nhistory: {len(history)} nights of {history[0].invoices:,} invoices before the "
          f"measured night(s)")
    names = _order({name for n in history for name in n.history.steps})
    # The CPU of each process over the whole run says which of them a dearer night spent it in.
    print(f"  {'night':<10}{'run s':>8}{'plain s':>8}{'ratio':>6}  "
          + "".join(f"{name[:7]:>8}" for name in names)
          + f"{'cpu py':>8}{'cpu tmp':>8}{'cpu pg':>8}{'pg kblk':>8}  counts")
    for n in history:
        verdict = "OK" if n.ok else "MISMATCH"
        walls = "".join(f"{n.history.steps[name].wall if name in n.history.steps else float('nan'):>8.2f}"
                        for name in names)
        cpu = "".join(f"{c:>8.2f}" for c in n.cpu.between(n.run_started, n.run_ended))
        print(f"  {n.day:<10}{n.run_seconds:>8.2f}{n.plain.seconds:>8.2f}{n.ratio:>6.1f}  {walls}"
              f"{cpu}{n.blocks / 1000:>8.0f}  {verdict}")
    first, last = history[0].run_seconds, history[-1].run_seconds
    print(f"  history seconds: {', '.join(f'{n.run_seconds:.2f}' for n in history)}")
    print(f"last vs first night: {(last - first) / first:+.0%} ({first:.2f} s -> {last:.2f} s)")
    if len(history) >= 2 * EDGE_NIGHTS:
        # One night swings by 15-30 % on a shared machine; five at each end say whether the
        # month made nights dearer, or one of them met a busy moment.
        head = statistics.median(n.run_seconds for n in history[:EDGE_NIGHTS])
        tail = statistics.median(n.run_seconds for n in history[-EDGE_NIGHTS:])
        print(f"last {EDGE_NIGHTS} vs first {EDGE_NIGHTS} nights (medians): "
              f"{(tail - head) / head:+.0%} ({head:.2f} s -> {tail:.2f} s)")
        # Every night counts in the fitted line, so one busy moment at either end moves it least.
        first_fit, last_fit = fitted_ends([n.run_seconds for n in history])
        print(f"fitted line, last vs first night: {(last_fit - first_fit) / first_fit:+.0%} "
              f"({first_fit:.2f} s -> {last_fit:.2f} s, least squares over all "
              f"{len(history)} nights)")
        # Seconds swing with the machine; the blocks a night reads do not.
        first_fit, last_fit = fitted_ends([n.blocks for n in history])
        print(f"Postgres blocks a night, fitted line, last vs first: "
              f"{(last_fit - first_fit) / first_fit:+.0%} ({first_fit:,.0f} -> {last_fit:,.0f})")


def fitted_ends(nightly: list[float]) -> tuple[float, float]:
    """The first and last night's values (seconds, blocks) on the least-squares line through
    all of them."""
    slope, intercept = statistics.linear_regression(range(len(nightly)), nightly)
    return intercept, intercept + slope * (len(nightly) - 1)


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
                    history.append(await run_night(
                        stack, client, pool, day, args.history_invoices, args.history_mismatches,
                        args.seed, args.progress_every, args.workers, args.format))
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
    if min(args.invoices, args.repeats, args.history_invoices) < 1 \
            or min(args.mismatches, args.workers, args.history, args.history_mismatches) < 0 \
            or args.progress_every <= 0:
        parser.error("--invoices, --repeats and --history-invoices must be at least 1; "
                     "--mismatches, --workers, --history and --history-mismatches at least 0")
    if args.history_mismatches > args.history_invoices or args.mismatches > args.invoices:
        parser.error("--mismatches (and --history-mismatches) cannot exceed the night's invoices")
    # Each night's counts are checked (ledger rows = seeded adjustments): with no grace window a
    # bill short of its goods is claimed the night it comes, as the seed states, never held.
    os.environ.setdefault("RECON_RECEIPT_GRACE_DAYS", "0")
    warnings.filterwarnings("ignore", category=UserWarning, module="platformdirs.*")  # as pytest does
    os.environ.pop("RECON_FAILPOINTS", None)  # failpoints read the environment: none in a bench
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
