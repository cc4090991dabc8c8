"""One night of bench/night.py on the embedded stack: seed it, settle the tables as a production
night finds them, serve it with one in-process worker or W `recon worker` processes, start it and
wait for its result, then read back its history, its counts in Postgres and its plain cost."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path

import structlog
from temporalio.client import Client, WorkflowHandle

from bench.cpu import CpuSampler, postmaster_pid, process_cpu, tree_cpu
from bench.night_events import HistoryReport, read_history
from bench.plain import Plain, plain_cost
from recon.runtime.config import MAX_PAISE
from recon.runtime.devstack import RunningStack
from recon.runtime.keyring import keyring_env
from recon.tools.seed import seed_night

ROOT = Path(__file__).resolve().parent.parent
WAREHOUSE = "ldh"
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


def quiet_night_environment() -> None:
    """What every night bench sets before it starts: no grace window (a bill short of its goods is
    claimed the night it comes, as the seed states, so each night's counts can be checked), no
    failpoints (they read the environment), and warnings and logs only."""
    os.environ.setdefault("RECON_RECEIPT_GRACE_DAYS", "0")
    warnings.filterwarnings("ignore", category=UserWarning, module="platformdirs.*")  # as pytest does
    os.environ.pop("RECON_FAILPOINTS", None)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


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
                    documents: str = "text", warehouse: str = WAREHOUSE) -> Night:
    from starter import start_night

    started = time.perf_counter()
    seeded = await seed_night(pool, day, warehouse, invoices, mismatches, seed, documents)
    seed_seconds = time.perf_counter() - started
    if len(seeded.adjustments) != mismatches:
        raise SystemExit(f"bench bug: seeded {len(seeded.adjustments)} adjustments, not {mismatches}")
    print(f"  {day} {warehouse}: seeded {invoices:,} invoices ({mismatches:,} adjustments due, "
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
        warehouse=warehouse,
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
            handle = await start_night(client, settings, day, warehouse)
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
          f"{result.adjustments_in_words()} adjusted, "
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
    async with worker_processes(env, logs) as procs:
        yield lambda: sum(process_cpu(p.pid) for p in procs)


@contextlib.asynccontextmanager
async def worker_processes(env: dict[str, str], logs: list[Path],
                           *options: str) -> AsyncIterator[list[subprocess.Popen]]:
    """One `recon worker` process per log file, as a deployment runs them, once each has said
    it started; terminated (killed after 30 s) when the block ends."""
    procs = [subprocess.Popen([sys.executable, "-m", "recon.cli", "worker", *options], cwd=ROOT,
                              env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL) for log in logs]
    try:
        deadline = time.monotonic() + 60
        while not all("worker started" in log.read_text(errors="replace") for log in logs):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise SystemExit(f"a worker did not start; see {logs}")
            await asyncio.sleep(0.05)
        yield procs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()

