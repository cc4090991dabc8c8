"""Many warehouses' nights started together, as the 02:00 schedules start them: is each one fair
and is the whole near the plain cost of its work?

    uv run python bench/warehouses.py [--warehouses N] [--invoices M] [--repeats R] [--workers W]

One embedded stack (Temporal dev server in memory, embedded Postgres) and W `recon worker`
processes (default 2) on one task queue. N warehouses: the head office `w01` has M invoices a
night, each branch `w02..wNN` a tenth of that (at least one), each with a twentieth adjusted (as
bench/night.py). Every night is seeded first (not counted), the tables vacuumed and analyzed as a
production night finds them. Then:

  - alone: each warehouse's night runs by itself, one after another (its time alone);
  - together (R times, each on a new date): every warehouse's night is started at once and each
    one's wall time from the common start to its result is taken.

It prints each night's time alone and together (and the ratio, median over the R rounds), the
round's total wall, the sum of the times alone, the plain cost of all the round's work
(bench/plain.py, summed over its nights), the CPU seconds of each process during the round
(each worker, the Temporal server, Postgres: bench/cpu.py) and the cores that makes, and checks
every night exact (model_calls / invoice_reads / ledger rows / distinct keys = invoices / invoices
/ adjustments / adjustments, as bench/night.py). The acceptance of issue 49 is printed as two
verdicts: total wall <= 1.5 x plain / cores, and the slowest branch night <= 2 x its time alone.
Exit code 0 only if every night is exact.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cpu import CpuSampler, postmaster_pid, process_cpu, tree_cpu  # noqa: E402
from bench.night_run import (  # noqa: E402
    _COUNTS,
    MASTER_TABLES,
    quiet_night_environment,
    worker_processes,
)
from bench.plain import plain_cost  # noqa: E402
from bench.warehouse_waits import Waits  # noqa: E402
from bench.warehouse_waits import waits as read_waits  # noqa: E402
from recon.domain.keys import workflow_id_for  # noqa: E402
from recon.runtime.config import MAX_PAISE  # noqa: E402
from recon.runtime.devstack import RunningStack, embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.keyring import keyring_env  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402

FIRST_DATE = date(2031, 3, 1)
ACCEPT_WALL = 1.5  # total wall <= 1.5 x plain cost / cores
ACCEPT_SMALL = 2.0  # slowest branch night <= 2 x its time alone


@dataclass
class Warehouse:
    name: str
    invoices: int
    mismatches: int
    alone: float = 0.0
    alone_cpu: float = 0.0  # CPU seconds of every process (workers, Temporal, Postgres) alone
    alone_worker_cpu: float = 0.0  # of which the `recon worker` processes'
    together: list[float] = field(default_factory=list)
    exact: bool = True

    @property
    def ratio(self) -> float:
        return statistics.median(self.together) / self.alone


@dataclass
class Round:
    wall: float
    plain: float
    cpu: dict[str, float]


def warehouses(n: int, invoices: int) -> list[Warehouse]:
    """The head office and its branches: one night ten times the others."""
    branch = max(1, invoices // 10)
    sizes = [invoices] + [branch] * (n - 1)
    return [Warehouse(f"w{i + 1:02d}", s, s // 20) for i, s in enumerate(sizes)]


def worker_env(stack: RunningStack, queue: str) -> dict[str, str]:
    """The workers' environment: this stack, the bench's queue, the gate wide open (a bench run
    never waits for a person) and every seeded short delivery claimed on its own night."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "OPENAI_"))}
    env.update(TEMPORAL_ADDRESS=stack.temporal.address, DATABASE_URL=stack.postgres.url,
               RECON_TASK_QUEUE=queue, PYTHONUNBUFFERED="1", RECON_RECEIPT_GRACE_DAYS="0",
               RECON_GATE_MAX_PARKED_RATIO="1", RECON_GATE_MAX_ADJUSTMENT_SHARE="1",
               RECON_GATE_MAX_TOTAL_PAISE=str(MAX_PAISE), RECON_GATE_MAX_SUPPLIER_PAISE=str(MAX_PAISE))
    for name in ("RECON_EXTRACT_BATCH", "RECON_POST_BATCH", "RECON_ACTIVITY_SLOTS"):  # if set
        if name in os.environ:
            env[name] = os.environ[name]
    settings = stack.settings()
    env.update(keyring_env(settings.payload_keyring, settings.payload_keys_file))
    return env


@contextlib.asynccontextmanager
async def fleet(stack: RunningStack, queue: str, workers: int) -> AsyncIterator[list[subprocess.Popen]]:
    """W `recon worker` processes on the queue, as a deployment runs them."""
    logs = [stack.temporal.state / f"worker-{queue}-{n}.log" for n in range(workers)]
    env = worker_env(stack, queue)
    async with worker_processes(env, logs, "--no-sender") as procs:
        yield procs


async def settle(pool) -> None:
    """As bench/night.py: a production night starts on vacuumed, analyzed, checkpointed tables."""
    await pool.execute(f"VACUUM (ANALYZE) {', '.join(MASTER_TABLES)}")
    await pool.execute("VACUUM")
    await pool.execute("CHECKPOINT")


async def run_nights(client, settings, day: str, group: list[Warehouse],
                     timeout: float, waits: dict[str, Waits] | None = None) -> dict[str, float]:
    """Start every night of `group` at once; seconds from the common start to each one's result."""
    from starter import start_night

    started = time.perf_counter()
    handles = await asyncio.gather(*(start_night(client, settings, day, w.name) for w in group))
    took: dict[str, float] = {}

    async def finish(w: Warehouse, handle) -> None:
        result = await handle.result()
        took[w.name] = time.perf_counter() - started
        if result.status != "Completed":
            raise SystemExit(f"{handle.id} ended {result.status}")
        if waits is not None:
            waits[w.name] = await read_waits(handle)

    try:
        await asyncio.wait_for(asyncio.gather(*(finish(w, h) for w, h in zip(group, handles,
                                                                              strict=True))), timeout)
    except TimeoutError:
        late = [w.name for w in group if w.name not in took]
        raise SystemExit(f"nights {late} not finished after {timeout:.0f} s (handed over? see the "
                         "Web UI)") from None
    return took


async def exact(pool, day: str, w: Warehouse) -> bool:
    """The night's counts as bench/night.py checks them."""
    c = await pool.fetchrow(_COUNTS, workflow_id_for(day, w.name))
    want = {"model_calls": w.invoices, "invoice_reads": w.invoices,
            "ledger_rows": w.mismatches, "distinct_keys": w.mismatches}
    wrong = {k: (c[k], v) for k, v in want.items() if c[k] != v}
    if wrong:
        print(f"  {workflow_id_for(day, w.name)}: NOT EXACT (got, want) {wrong}", flush=True)
    return not wrong


async def run(args: argparse.Namespace) -> int:
    group = warehouses(args.warehouses, args.invoices)
    state = Path(tempfile.mkdtemp(prefix="recon-bench-warehouses-"))
    queue = f"bench-warehouses-{uuid.uuid4().hex[:8]}"
    rounds: list[Round] = []
    cores = len(os.sched_getaffinity(0))
    try:
        with embedded_stack(state, port=free_port(), ui_port=free_port(), persistent=False,
                            fairness=args.fairness) as stack:
            pool = await connect_pool(stack.postgres.url, max_size=4)
            try:
                await migrate(pool)
                client = await connect(stack.settings())
                settings = stack.settings()
                days = [(FIRST_DATE + timedelta(days=d)).isoformat() for d in range(1 + args.repeats)]
                started = time.perf_counter()
                for day in days:
                    for w in group:
                        await seed_night(pool, day, w.name, w.invoices, w.mismatches, args.seed, "text")
                await settle(pool)
                print(f"{len(group)} warehouses (w01: {group[0].invoices:,} invoices, "
                      f"{len(group) - 1} branches of {group[-1].invoices:,}), {len(days)} nights each "
                      f"seeded in {time.perf_counter() - started:.1f} s; {args.workers} workers, "
                      f"{cores} cores, fairness {'on' if args.fairness else 'off'}", flush=True)
                async with fleet(stack, queue, args.workers) as procs:
                    settings = _settings(settings, queue)
                    pg = postmaster_pid(str(stack.postgres.datadir))

                    def workers_cpu() -> float:
                        return sum(process_cpu(p.pid) for p in procs)

                    def cpu_now() -> float:
                        return (workers_cpu() + tree_cpu(pg)
                                + process_cpu(stack.temporal.process.pid))

                    for w in group:
                        before_cpu, before_workers = cpu_now(), workers_cpu()
                        w.alone = (await run_nights(client, settings, days[0], [w], args.timeout))[w.name]
                        w.alone_cpu = cpu_now() - before_cpu
                        w.alone_worker_cpu = workers_cpu() - before_workers
                        w.exact &= await exact(pool, days[0], w)
                    print("alone: " + ", ".join(f"{w.name} {w.alone:.2f} s ({w.alone_cpu:.2f} cpu)"
                                                for w in group), flush=True)
                    branch_cpu = statistics.median(w.alone_worker_cpu for w in group[1:] or group)
                    print(f"workers' cpu alone: {group[0].name} {group[0].alone_worker_cpu:.3f} s, "
                          f"a branch (median) {branch_cpu:.3f} s", flush=True)
                    for day in days[1:]:
                        await settle(pool)
                        sampler = CpuSampler(
                            python=lambda: process_cpu(procs[0].pid),
                            temporal=lambda: process_cpu(stack.temporal.process.pid),
                            postgres=lambda: tree_cpu(pg))
                        others = [p.pid for p in procs[1:]]
                        before = sum(process_cpu(p) for p in others)
                        waited: dict[str, Waits] = {}
                        with sampler:
                            t0 = time.time()
                            took = await run_nights(client, settings, day, group, args.timeout,
                                                    waited)
                            t1 = time.time()
                        rest = sum(process_cpu(p) for p in others) - before
                        w1, tmp, pgc = sampler.between(t0, t1)
                        plain = 0.0
                        for w in group:
                            w.together.append(took[w.name])
                            w.exact &= await exact(pool, day, w)
                            plain += (await plain_cost(pool, workflow_id_for(day, w.name))).seconds
                        cpu = {"worker 1": w1}
                        if len(procs) > 1:
                            cpu["worker 2" if len(procs) == 2 else f"workers 2-{len(procs)}"] = rest
                        cpu.update(temporal=tmp, postgres=pgc)
                        rounds.append(Round(max(took.values()), plain, cpu))
                        print(f"together {day}: total {rounds[-1].wall:.2f} s, plain {plain:.2f} s; "
                              + ", ".join(f"{w.name} {took[w.name]:.2f}" for w in group), flush=True)
                        slowest = max(group[1:] or group, key=lambda w: took[w.name] / w.alone)
                        for name in dict.fromkeys([group[0].name, slowest.name]):
                            print(f"  {name} {took[name]:.2f} s: {waited[name].line()}", flush=True)
            finally:
                await pool.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)
    show(group, rounds, cores)
    return 0 if all(w.exact for w in group) else 1


def _settings(settings, queue: str):
    from dataclasses import replace

    return replace(settings, task_queue=queue, openai_api_key=None, openai_base_url=None,
                   failpoints="")


def show(group: list[Warehouse], rounds: list[Round], cores: int) -> None:
    med = statistics.median
    print(f"\n{'night':<8}{'invoices':>10}{'alone s':>10}{'together s':>12}{'ratio':>8}  exact")
    for w in group:
        print(f"{w.name:<8}{w.invoices:>10,}{w.alone:>10.2f}{med(w.together):>12.2f}"
              f"{w.ratio:>8.2f}  {'OK' if w.exact else 'MISMATCH'}")
    wall, plain = med(r.wall for r in rounds), med(r.plain for r in rounds)
    alone = sum(w.alone for w in group)
    print(f"\ntotal wall (median of {len(rounds)})  {wall:8.2f} s")
    print(f"sum of the times alone      {alone:8.2f} s  (together / one after another: "
          f"{wall / alone:.2f})")
    print(f"plain cost of all the work  {plain:8.2f} s  (bench/plain.py, summed over the nights)")
    for name in rounds[0].cpu:
        print(f"cpu {name:<23} {med(r.cpu[name] for r in rounds):8.2f} s")
    used = med(sum(r.cpu.values()) / r.wall for r in rounds)
    print(f"cores used (cpu / wall)     {used:8.2f}  of {cores}")
    bound = ACCEPT_WALL * plain / cores
    print(f"total wall / (plain / {cores} cores) {wall / (plain / cores):.2f}  (acceptance <= "
          f"{ACCEPT_WALL}: {'PASS' if wall <= bound else 'FAIL'})")
    branches = group[1:] or group
    worst = max(branches, key=lambda w: w.ratio)
    print(f"slowest branch night {worst.name}: {worst.ratio:.2f} x its time alone (acceptance <= "
          f"{ACCEPT_SMALL}: {'PASS' if worst.ratio <= ACCEPT_SMALL else 'FAIL'})")
    # What no scheduling can beat: the branches' own CPU (as each used alone) spread over every
    # core finishes no sooner than this, even with the head office's night made to wait.
    floor = sum(w.alone_cpu for w in branches) / cores
    print(f"work floor of the last branch night: its and the other branches' CPU alone / {cores} "
          f"cores = {floor:.2f} s = {floor / worst.alone:.2f} x its time alone")
    total_floor = sum(w.alone_cpu for w in group) / cores
    print(f"work floor of the total: every night's CPU alone / {cores} cores = {total_floor:.2f} s "
          f"(= {total_floor / (plain / cores):.2f} x plain / cores); CPU together / CPU alone "
          f"{med(sum(r.cpu.values()) for r in rounds) / sum(w.alone_cpu for w in group):.2f}")
    print(f"every night exact: {'OK' if all(w.exact for w in group) else 'MISMATCH'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouses", type=int, default=8, help="nights started together")
    parser.add_argument("--invoices", type=int, default=5000,
                        help="the head office's invoices (each branch: a tenth)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds together (new dates)")
    parser.add_argument("--workers", type=int, default=2, help="`recon worker` processes")
    parser.add_argument("--fairness", action=argparse.BooleanOptionalAction, default=False,
                        help="the dev server hands out the queue's tasks in turn per warehouse "
                             "(matching.enableFairness); by default first come, first served, as "
                             "a stock server does")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated nights")
    parser.add_argument("--timeout", type=float, default=1800, help="give up on a round after this")
    args = parser.parse_args()
    if min(args.warehouses, args.invoices, args.repeats, args.workers) < 1 or args.timeout <= 0:
        parser.error("--warehouses, --invoices, --repeats, --workers must be at least 1")
    quiet_night_environment()
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
