"""Extraction against a paid model: speed-up over one request at a time, and the pace limit.

Runs whole nights on the embedded stack against an OpenAI-compatible server on loopback
(`tests/fakes/openai_server.py`) that takes `--delay` seconds (default 0.2) to answer each request, and
reads every figure from the server's own clock:

- one at a time: `--serial` invoices with one call in flight (one activity, concurrency 1),
  giving the cost per invoice when nothing overlaps;
- in parallel (the defaults: RECON_EXTRACT_BATCH 50, RECON_EXTRACT_CONCURRENCY 8) for 312 and
  5,000 invoices: the extraction span (first request in to last answer out) and the speed-up
  over one at a time for the same number of invoices;
- with RECON_MODEL_RPM set (`--rpm`, default 1200): requests in the busiest 60 s window and the
  busiest 5 s window scaled to a minute, which must stay under the limit.

    uv run python bench/model.py [--sizes 312,5000 --serial 100 --rpm 1200 --rpm-invoices 400]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from types import SimpleNamespace

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recon.runtime.config import MAX_PAISE  # noqa: E402
from recon.runtime.devstack import embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402
from tests.fakes.openai_server import API_KEY, MODEL  # noqa: E402

WAREHOUSE = "ldh"
FIRST_DATE = date(2032, 1, 1)
ROOT = Path(__file__).resolve().parent.parent


class LoopbackModel:
    """tests/fakes/openai_server.py in a process of its own (its threads must not compete with the
    worker for the GIL); what it received is read back over GET /received."""

    def __init__(self, delay: float) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.openai_server", str(self.port), str(delay)], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        self.process.stdout.readline()  # "listening on PORT"
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def snapshot(self) -> list[SimpleNamespace]:
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with direct.open(f"http://127.0.0.1:{self.port}/received", timeout=30) as r:
            return [SimpleNamespace(**x) for x in json.load(r)]

    def __enter__(self) -> LoopbackModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(10)


async def night(stack, client, pool, fake: LoopbackModel, day: str, invoices: int,
                **changes) -> tuple[float, list]:
    """Run one night; return (extraction span on the server's clock, requests of this night)."""
    from starter import start_night
    from worker import run_worker

    await seed_night(pool, day, WAREHOUSE, invoices, max(1, invoices // 50), 7)
    settings = replace(
        stack.settings(), task_queue=f"bench-model-{uuid.uuid4().hex[:8]}", warehouse=WAREHOUSE,
        openai_api_key=API_KEY, openai_base_url=fake.base_url, model=MODEL, failpoints="",
        gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0, gate_max_total_paise=MAX_PAISE,
        gate_max_supplier_paise=MAX_PAISE, **changes,
    )
    first = len(fake.snapshot())
    ready, stop = asyncio.Event(), asyncio.Event()
    worker = asyncio.create_task(run_worker(settings, ready=ready, stop=stop))
    try:
        await asyncio.wait_for(ready.wait(), 60)
        handle = await start_night(client, settings, day, WAREHOUSE)
        result = await handle.result()
    finally:
        stop.set()
        await asyncio.wait_for(worker, 60)
    if result.status != "Completed":
        raise SystemExit(f"night {day} ended {result.status}")
    seen = fake.snapshot()[first:]
    span = max(r.answered or r.arrived for r in seen) - min(r.arrived for r in seen)
    return span, seen


def busiest(arrivals: list[float], window: float) -> int:
    arrivals = sorted(arrivals)
    best, lo = 0, 0
    for hi, t in enumerate(arrivals):
        while t - arrivals[lo] >= window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


async def run(args: argparse.Namespace) -> None:
    state = Path(tempfile.mkdtemp(prefix="recon-bench-model-"))
    days = (str(FIRST_DATE + timedelta(days=n)) for n in range(100))
    try:
        with embedded_stack(state, port=free_port(), ui_port=free_port(), persistent=False) as stack, \
                LoopbackModel(args.delay) as fake:
            pool = await connect_pool(stack.postgres.url, max_size=4)
            await migrate(pool)
            client = await connect(stack.settings())
            print(f"loopback model answering in {args.delay * 1000:.0f} ms per request", flush=True)

            span, seen = await night(stack, client, pool, fake, next(days), args.serial,
                                     extract_batch_size=args.serial, extract_concurrency=1)
            per_invoice = span / len(seen)
            print(f"one at a time: {len(seen)} invoices in {span:.2f} s = "
                  f"{per_invoice * 1000:.0f} ms per invoice", flush=True)

            for size in args.sizes:
                span, seen = await night(stack, client, pool, fake, next(days), size)
                serial = per_invoice * size
                print(f"{size:>6,} invoices: extraction {span:.2f} s, {len(seen):,} requests; "
                      f"one at a time ~{serial:.1f} s; speed-up {serial / span:.1f}x", flush=True)

            started = time.time()
            span, seen = await night(stack, client, pool, fake, next(days), args.rpm_invoices,
                                     model_rpm=args.rpm)
            arrivals = [r.arrived for r in seen]
            minute = busiest(arrivals, 60.0)
            five = busiest(arrivals, 5.0)
            rate = (len(arrivals) - 1) / (max(arrivals) - min(arrivals)) * 60
            verdict = "under" if minute <= args.rpm and five * 12 <= args.rpm * 1.05 else "OVER"
            print(f"RECON_MODEL_RPM={args.rpm}: {len(seen)} requests in {span:.1f} s "
                  f"(night {time.time() - started:.1f} s); average {rate:.0f}/min; busiest 60 s "
                  f"window {minute}; busiest 5 s window {five} (= {five * 12}/min): {verdict} "
                  f"the limit", flush=True)
            await pool.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--serial", type=int, default=100)
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")],
                        default=[312, 5000])
    parser.add_argument("--rpm", type=int, default=1200)
    parser.add_argument("--rpm-invoices", type=int, default=400)
    logging.basicConfig(level=logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(run(parser.parse_args()))
