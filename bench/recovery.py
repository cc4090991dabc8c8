"""How fast a killed worker's run is finished by another worker, and that nothing is posted twice.

    uv run python bench/recovery.py [--kills 10] [--invoices 120] [--mismatches 40] [--seed 7]
                                    [--pause SECONDS] [--stock] [--timeline]

Starts its own embedded Temporal dev server (in memory, free ports) and embedded PostgreSQL in a
temporary directory; with `--stock`, the production-like set-up instead (bench/production_stack.py:
`temporal server start-dev` with no dynamic-config changes, Debian's PostgreSQL, a role that is not
a superuser), where only the worker's own settings make recovery fast.

For each kill: seeds a night (its own warehouse), starts two real worker processes (`recon worker`)
on one task queue, as production runs them, both with a failpoint that
exits hard at a random entry of step 7 in its first attempt (post_adjustments, 5 entries per
batch), starts the run, waits for whichever worker took step 7 to die, and times crash -> finished
run, which the surviving worker completes (the retry is attempt 2, so its failpoint does not
fire). Per kill it prints the entry, crash -> retry started (the retried attempt's
ActivityTaskStarted in the history) and crash -> finished; then the median and worst, and the
duplicates over all runs: ledger rows, stock movements, outbox rows and model calls beyond what
each night calls for (must be 0).

Without --pause step 7 takes a few milliseconds, so every kill lands just after the step's first
heartbeat: the slowest case, where the whole heartbeat timeout passes before Temporal notices.
`--pause S` sleeps S seconds after each batch (in every attempt), spreading kills between
heartbeats; the retry then also walks the rest of the step at that pace. `--timeline` prints, per
kill, every history event from the crash on with its time after the crash (where the time goes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from temporalio.api.common.v1 import WorkflowExecution  # noqa: E402
from temporalio.api.enums.v1 import EventType, PendingActivityState  # noqa: E402
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest  # noqa: E402
from temporalio.client import Client, WorkflowHandle  # noqa: E402
from temporalio.service import RPCError  # noqa: E402

from bench.production_stack import production_stack  # noqa: E402
from recon.runtime.config import MAX_PAISE  # noqa: E402
from recon.runtime.devstack import RunningStack, embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402

DAY = "2031-03-01"
BATCH = 5

_EXTRA = """
SELECT
  (SELECT count(*) FROM ledger_entries WHERE workflow_id = $1)
    - (SELECT count(*) FROM mismatches WHERE workflow_id = $1) AS ledger,
  (SELECT count(*) FROM stock_movements WHERE workflow_id = $1)
    - (SELECT count(*) FROM comparisons WHERE workflow_id = $1) AS stock,
  (SELECT count(*) FROM model_calls WHERE workflow_id = $1)
    - (SELECT count(*) FROM run_invoices WHERE workflow_id = $1) AS model_calls,
  (SELECT count(*) FROM outbox WHERE workflow_id = $1)
    - (SELECT count(DISTINCT key) FROM outbox WHERE workflow_id = $1) AS outbox
"""


@dataclass
class Kill:
    warehouse: str
    entry: int
    to_retry: float
    to_finish: float
    extra: dict[str, int]


def spawn_worker(stack: RunningStack, queue: str, log: Path, **env: str) -> subprocess.Popen:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "OPENAI_"))}
    full.update(TEMPORAL_ADDRESS=stack.temporal.address, DATABASE_URL=stack.postgres.url,
                RECON_TASK_QUEUE=queue, RECON_POST_BATCH=str(BATCH), PYTHONUNBUFFERED="1",
                # the gate is the worker's policy: never hand over at it here
                RECON_GATE_MAX_PARKED_RATIO="1", RECON_GATE_MAX_ADJUSTMENT_SHARE="1",
                RECON_GATE_MAX_TOTAL_PAISE=str(MAX_PAISE),
                RECON_GATE_MAX_SUPPLIER_PAISE=str(MAX_PAISE), **env)
    return subprocess.Popen([sys.executable, "-m", "recon.cli", "worker"], cwd=ROOT, env=full,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


async def retry_started_at(handle: WorkflowHandle) -> float | None:
    """Wall time the retried attempt of step 7 started (its ActivityTaskStarted, attempt > 1)."""
    scheduled: set[int] = set()
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            if event.activity_task_scheduled_event_attributes.activity_type.name == \
                    "post_adjustments":
                scheduled.add(event.event_id)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            if attrs.scheduled_event_id in scheduled and attrs.attempt > 1:
                return event.event_time.ToDatetime().timestamp()
    return None


async def print_timeline(handle: WorkflowHandle, crashed_wall: float) -> None:
    """Every event from the crash on: time after the crash, type, and the attempt of a start."""
    async for event in handle.fetch_history_events():
        at = event.event_time.ToDatetime().timestamp() - crashed_wall
        if at < -0.5:
            continue
        name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
        extra = ""
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            extra = event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            extra = f"attempt {event.activity_task_started_event_attributes.attempt}"
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            extra = event.workflow_task_started_event_attributes.identity
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
            extra = str(event.workflow_task_timed_out_event_attributes.timeout_type)
        print(f"        {at:+7.3f} s  {event.event_id:>4}  {name}  {extra}", flush=True)


async def watch_pending(client: Client, handle: WorkflowHandle, crashed_wall: float,
                        done: asyncio.Event) -> None:
    """Poll the run's pending step 7 after the crash and print each change of its attempt or
    state, with the server's own times: when it noticed the lost worker (attempt 2 scheduled,
    `next` = the retry's due time) and when a worker took the retry."""
    seen = None
    while not done.is_set():
        with contextlib.suppress(RPCError):
            described = await client.workflow_service.describe_workflow_execution(
                DescribeWorkflowExecutionRequest(namespace=client.namespace,
                                                 execution=WorkflowExecution(workflow_id=handle.id)))
            for p in described.pending_activities:
                now = (p.attempt, p.state)
                if now != seen:
                    seen = now
                    due = p.scheduled_time.ToDatetime().timestamp() - crashed_wall \
                        if p.HasField("scheduled_time") else float("nan")
                    beat = p.last_heartbeat_time.ToDatetime().timestamp() - crashed_wall \
                        if p.HasField("last_heartbeat_time") else float("nan")
                    print(f"        {time.time() - crashed_wall:+7.3f} s  pending "
                          f"{p.activity_type.name} attempt {p.attempt} "
                          f"{PendingActivityState.Name(p.state)} last beat {beat:+.3f} "
                          f"next {due:+.3f}", flush=True)
        await asyncio.sleep(0.02)


async def one_kill(stack: RunningStack, client, pool, state: Path, n: int, invoices: int,
                   mismatches: int, seed: int, pause: float, rng: random.Random,
                   timeline: bool = False) -> Kill:
    from starter import start_night

    warehouse, queue = f"r{n}", f"bench-recovery-{n}-{os.getpid()}"
    entry = rng.randint(1, mismatches)
    await seed_night(pool, DAY, warehouse, invoices, mismatches, seed)
    points = f"post_adjustments:{entry}:first"
    if pause:
        points += f",post_adjustments:delay:{pause}"
    workers = [spawn_worker(stack, queue, state / f"worker-{n}-{w}.log", RECON_FAILPOINTS=points)
               for w in "ab"]
    try:
        settings = replace(stack.settings(), task_queue=queue, post_batch_size=BATCH, failpoints="",
                           gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0)
        handle = await start_night(client, settings, DAY, warehouse)
        while all(w.poll() is None for w in workers):
            await asyncio.sleep(0.01)
        crashed_wall, crashed = time.time(), time.monotonic()
        done = asyncio.Event()
        watcher = asyncio.create_task(watch_pending(client, handle, crashed_wall, done)) \
            if timeline else None
        dead = next(w for w in workers if w.poll() is not None)
        if dead.returncode != 137:
            raise SystemExit(f"kill {n}: a worker exited with {dead.returncode}, see {state}")
        await asyncio.wait_for(handle.result(), 120)
        to_finish = time.monotonic() - crashed
        if watcher is not None:
            done.set()
            await watcher
        retry_at = await retry_started_at(handle)
        if timeline:
            await print_timeline(handle, crashed_wall)
        extra = dict(await pool.fetchrow(_EXTRA, handle.id))
        return Kill(warehouse, entry, (retry_at - crashed_wall) if retry_at else float("nan"),
                    to_finish, extra)
    finally:
        for w in workers:
            if w.poll() is None:
                w.terminate()
                try:
                    w.wait(10)
                except subprocess.TimeoutExpired:
                    w.kill()


async def run(args: argparse.Namespace) -> int:
    state = Path(tempfile.mkdtemp(prefix="recon-bench-recovery-"))
    rng = random.Random(args.seed)
    kills: list[Kill] = []
    try:
        servers = production_stack(state) if args.stock else \
            embedded_stack(state, free_port(), free_port(), persistent=False)
        with servers as stack:
            pool = await connect_pool(stack.postgres.url, max_size=4)
            try:
                await migrate(pool)
                client = await connect(stack.settings())
                print(("stock Temporal, Debian PostgreSQL: " if args.stock else "embedded: ")
                      + f"{args.kills} kills, {args.invoices} invoices and {args.mismatches} "
                      f"adjustments a night, {BATCH} entries a batch, {args.pause} s pause after "
                      "each batch; two workers, one dies", flush=True)
                print(f"  {'kill':>4}  {'entry':>5}  {'crash->retry s':>14}  {'crash->done s':>13}",
                      flush=True)
                for n in range(1, args.kills + 1):
                    k = await one_kill(stack, client, pool, state, n, args.invoices,
                                       args.mismatches, args.seed, args.pause, rng,
                                       args.timeline)
                    kills.append(k)
                    print(f"  {n:>4}  {k.entry:>5}  {k.to_retry:>14.2f}  {k.to_finish:>13.2f}",
                          flush=True)
            finally:
                await pool.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)
    finish = [k.to_finish for k in kills]
    retry = [k.to_retry for k in kills]
    duplicates = sum(max(v, 0) for k in kills for v in k.extra.values())
    missing = sum(-min(v, 0) for k in kills for v in k.extra.values())
    print(f"crash -> retry started: median {statistics.median(retry):.2f} s, "
          f"worst {max(retry):.2f} s")
    print(f"crash -> finished run: median {statistics.median(finish):.2f} s, "
          f"worst {max(finish):.2f} s (target: median <= 3 s, worst <= 4 s)")
    print(f"duplicates: {duplicates} (ledger rows, stock movements, model calls, outbox rows "
          f"beyond what the nights call for); missing: {missing}")
    return 0 if duplicates == 0 and missing == 0 else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--invoices", type=int, default=120)
    parser.add_argument("--mismatches", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7, help="seeds the nights and the kill points")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds after each batch")
    parser.add_argument("--stock", action="store_true",
                        help="stock `temporal server start-dev` and Debian's PostgreSQL")
    parser.add_argument("--timeline", action="store_true",
                        help="print each kill's history from the crash on")
    args = parser.parse_args()
    if args.kills < 1 or args.invoices < 1 or args.mismatches < 1 or args.pause < 0:
        parser.error("--kills, --invoices and --mismatches must be at least 1, --pause at least 0")
    warnings.filterwarnings("ignore", category=UserWarning, module="platformdirs.*")
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
