"""Kills against a counting model server, with another worker frozen now and then: is any invoice
answered more than once beyond the requests in flight at the kill? (issue 44)

    uv run python bench/model_kills.py [--kills 20] [--invoices 312] [--delay 0.3] [--seed 44]

Starts its own embedded Temporal and PostgreSQL and the loopback model server
(tests/fakes/openai_server.py in a process of its own, counting every request on its clock). For
each kill: seeds a night, starts two real `recon worker` processes on one task queue, "busy" and
"doomed" (heartbeat timeout 2 s, 4 requests in flight per batch of 40); once a random number of
requests has been answered the busy worker is frozen (SIGSTOP: a worker whose heartbeats are late
on a loaded machine) until Temporal has handed its batches over (3 heartbeat timeouts), then woken;
after a random 5-40 further answers to the doomed worker (or 30 s) it is SIGKILLed, the requests
still `sent` in `model_calls` at that moment are "in flight at the kill", and a successor finishes
the night.
Per kill it prints the requests in flight at the freeze and at the kill, the invoices asked again,
and those asked more often than once plus the kills they were in flight at (must be 0).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.model import LoopbackModel  # noqa: E402
from recon.domain.keys import number_of  # noqa: E402
from recon.runtime.config import MAX_PAISE  # noqa: E402
from recon.runtime.devstack import RunningStack, embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402
from tests.fakes.openai_server import API_KEY, MODEL  # noqa: E402

DAY = "2031-04-01"
HEARTBEAT, BATCH, CONCURRENCY = 2, 40, 4

_SENT = "SELECT invoice_no FROM model_calls WHERE workflow_id = $1 AND outcome = 'sent'"


def spawn_worker(stack: RunningStack, queue: str, log: Path, base_url: str,
                 sender: str) -> subprocess.Popen:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "OPENAI_"))}
    full.update(TEMPORAL_ADDRESS=stack.temporal.address, DATABASE_URL=stack.postgres.url,
                RECON_TASK_QUEUE=queue, PYTHONUNBUFFERED="1", OPENAI_API_KEY=API_KEY,
                OPENAI_BASE_URL=base_url, RECON_MODEL=MODEL, OPENAI_PROJECT_ID=sender,
                RECON_HEARTBEAT_SECONDS=str(HEARTBEAT), RECON_EXTRACT_CONCURRENCY=str(CONCURRENCY),
                RECON_GATE_MAX_PARKED_RATIO="1", RECON_GATE_MAX_ADJUSTMENT_SHARE="1",
                RECON_GATE_MAX_TOTAL_PAISE=str(MAX_PAISE),
                RECON_GATE_MAX_SUPPLIER_PAISE=str(MAX_PAISE))
    return subprocess.Popen([sys.executable, "-m", "recon.cli", "worker"], cwd=ROOT, env=full,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


async def _answered_at_least(fake: LoopbackModel, first: int, n: int, timeout: float,
                             sender: str | None = None) -> bool:
    """Wait for `n` answers since request `first` (to `sender` only, if named); False if the
    night's extraction ended (or `timeout` passed) first."""
    deadline = time.monotonic() + timeout
    while sum(1 for r in (await asyncio.to_thread(fake.snapshot))[first:]
              if r.answered is not None and sender in (None, r.sender)) < n:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def one_kill(stack, client, pool, fake: LoopbackModel, state: Path, n: int,
                   invoices: int, rng: random.Random) -> dict:
    from starter import start_night

    warehouse, queue = f"k{n}", f"bench-model-kills-{n}-{os.getpid()}"
    await seed_night(pool, DAY, warehouse, invoices, max(1, invoices // 30), n)
    first = len(fake.snapshot())
    freeze_at = rng.randint(10, invoices // 4)
    kill_after = rng.randint(5, 40)  # answers to the doomed worker after the busy one woke
    workers = {who: spawn_worker(stack, queue, state / f"worker-{n}-{who}.log", fake.base_url, who)
               for who in ("busy", "doomed")}
    try:
        settings = replace(stack.settings(), task_queue=queue, failpoints="",
                           extract_batch_size=BATCH, heartbeat_seconds=HEARTBEAT,
                           gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0)
        handle = await start_night(client, settings, DAY, warehouse)
        if not await _answered_at_least(fake, first, freeze_at, 120):
            raise SystemExit(f"kill {n}: fewer than {freeze_at} answers within 120 s, see {state}")
        workers["busy"].send_signal(signal.SIGSTOP)
        at_freeze = {r["invoice_no"] for r in await pool.fetch(_SENT, handle.id)}
        await asyncio.sleep(3 * HEARTBEAT)  # its batches go to the doomed worker meanwhile
        workers["busy"].send_signal(signal.SIGCONT)
        woke = len(await asyncio.to_thread(fake.snapshot))
        # the doomed worker asking again, or (when the woken worker holds the rest) the step's end
        await _answered_at_least(fake, woke, kill_after, 30, "doomed")
        workers["doomed"].kill()
        workers["doomed"].wait(10)
        at_kill = {r["invoice_no"] for r in await pool.fetch(_SENT, handle.id)}
        workers["successor"] = spawn_worker(stack, queue, state / f"worker-{n}-successor.log",
                                            fake.base_url, "successor")
        result = await asyncio.wait_for(handle.result(), 300)
        if result.status != "Completed":
            raise SystemExit(f"kill {n}: the night ended {result.status}, see {state}")
        received = (await asyncio.to_thread(fake.snapshot))[first:]
    finally:
        for w in workers.values():
            if w.poll() is None:
                w.send_signal(signal.SIGCONT)
                w.terminate()
                try:
                    w.wait(20)
                except subprocess.TimeoutExpired:
                    w.kill()
    in_flight = {number_of(i) for i in at_kill}
    asked = Counter(r.invoice_no for r in received)
    answered = Counter(r.invoice_no for r in received if r.answered is not None)
    twice = sum(1 for c in answered.values() if c > 1)
    again = {i for i, c in asked.items() if c > 1}
    # asked (any answer or none) more often than once plus the kill it was in flight at
    beyond = sorted(i for i, c in asked.items() if c > 1 + (i in in_flight))
    return dict(n=n, freeze_at=freeze_at, kill_after=kill_after, at_freeze=len(at_freeze),
                at_kill=len(in_flight), asked=len(asked), again=len(again),
                twice=twice, freeze_again=len(again & {number_of(i) for i in at_freeze} - in_flight),
                beyond=beyond)


async def run(args: argparse.Namespace) -> int:
    state = Path(tempfile.mkdtemp(prefix="recon-bench-model-kills-"))
    rng = random.Random(args.seed)
    rounds: list[dict] = []
    try:
        with embedded_stack(state, free_port(), free_port(), persistent=False) as stack, \
                LoopbackModel(args.delay) as fake:
            pool = await connect_pool(stack.postgres.url, max_size=4)
            try:
                await migrate(pool)
                client = await connect(stack.settings())
                print(f"{args.kills} kills, {args.invoices} invoices a night, the model answering "
                      f"in {args.delay * 1000:.0f} ms; a busy worker frozen {3 * HEARTBEAT} s "
                      "mid-extraction, then the doomed worker SIGKILLed", flush=True)
                print("  kill  freeze@  kill@+  in flight@freeze  in flight@kill  asked again  "
                      "answered twice  in flight only @freeze & asked again  beyond", flush=True)
                for n in range(1, args.kills + 1):
                    r = await one_kill(stack, client, pool, fake, state, n, args.invoices, rng)
                    rounds.append(r)
                    print(f"  {n:>4}  {r['freeze_at']:>7}  {r['kill_after']:>6}  {r['at_freeze']:>16}  "
                          f"{r['at_kill']:>14}  {r['again']:>11}  {r['twice']:>14}  {r['freeze_again']:>34}  "
                          f"{len(r['beyond']):>6} {' '.join(r['beyond'][:5])}", flush=True)
            finally:
                await pool.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)
    beyond = sum(len(r["beyond"]) for r in rounds)
    print(f"invoices answered more than once beyond the requests in flight at the kill: {beyond} "
          f"(in {sum(1 for r in rounds if r['beyond'])} of {len(rounds)} nights); asked again "
          f"{sum(r['again'] for r in rounds)}, in flight at the kills {sum(r['at_kill'] for r in rounds)}")
    return 0 if beyond == 0 else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--invoices", type=int, default=312)
    parser.add_argument("--delay", type=float, default=0.3, help="seconds the model takes")
    parser.add_argument("--seed", type=int, default=44, help="seeds the nights and the moments")
    args = parser.parse_args()
    if args.kills < 1 or args.invoices < 120 or args.delay <= 0:
        parser.error("--kills must be at least 1, --invoices at least 120, --delay above 0")
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
