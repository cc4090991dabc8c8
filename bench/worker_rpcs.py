"""The RPCs a worker makes to Temporal for one night, by operation, from the SDK's own metrics.

    uv run python bench/worker_rpcs.py [--nights N] [--invoices M]

One embedded stack, one in-process worker with its Prometheus metrics on (the SDK counts every
request it sends: `temporal_request_total` and `temporal_long_request_total` by operation). N
branch nights of M invoices (a twentieth adjusted) are seeded, then run one after another; the
counters' growth divided by N is printed per operation. Each RecordActivityTaskHeartbeat is a
write of the run's state at Temporal, so a night's fixed cost there shows here in numbers that no
load on the machine changes (issue 49).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import shutil
import sys
import tempfile
import urllib.request
import uuid
from dataclasses import replace
from pathlib import Path

import structlog

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recon.runtime.config import MAX_PAISE  # noqa: E402
from recon.runtime.devstack import embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402

_REQUEST = re.compile(r'temporal_(?:long_)?request_total\{([^}]*)\} (\S+)')


def requests_sent(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    sent: dict[str, float] = {}
    for labels, value in _REQUEST.findall(text):
        op = re.search(r'operation="([^"]+)"', labels)
        if op:
            sent[op.group(1)] = sent.get(op.group(1), 0.0) + float(value)
    return sent


async def run(nights: int, invoices: int) -> None:
    from starter import start_night
    from worker import run_worker

    state = Path(tempfile.mkdtemp(prefix="recon-bench-rpcs-"))
    try:
        with embedded_stack(state, port=free_port(), ui_port=free_port(), persistent=False) as stack:
            pool = await connect_pool(stack.postgres.url, max_size=4)
            await migrate(pool)
            port = free_port()
            settings = replace(
                stack.settings(), task_queue=f"bench-rpcs-{uuid.uuid4().hex[:8]}", metrics_port=port,
                openai_api_key=None, openai_base_url=None, failpoints="", receipt_grace_days=0,
                gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0,
                gate_max_total_paise=MAX_PAISE, gate_max_supplier_paise=MAX_PAISE)
            days = [f"2031-03-{d + 1:02d}" for d in range(nights)]
            for day in days:
                await seed_night(pool, day, "w02", invoices, invoices // 20, 7, "text")
            ready, stop = asyncio.Event(), asyncio.Event()
            task = asyncio.create_task(run_worker(settings, ready=ready, stop=stop, with_sender=False))
            try:
                await asyncio.wait_for(ready.wait(), 60)
                client = await connect(settings)
                before = requests_sent(port)
                for day in days:
                    result = await (await start_night(client, settings, day, "w02")).result()
                    if result.status != "Completed":
                        raise SystemExit(f"night {day} ended {result.status}")
                await asyncio.sleep(1.5)  # the last counts reach the exporter
                after = requests_sent(port)
            finally:
                stop.set()
                await task
                await pool.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)
    print(f"\nRPCs to Temporal per night ({nights} nights of {invoices:,} invoices, one worker):")
    for op in sorted(after):
        grown = after[op] - before.get(op, 0.0)
        if grown:
            print(f"  {op:<40}{grown / nights:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=4, help="nights run one after another")
    parser.add_argument("--invoices", type=int, default=500, help="invoices a night")
    args = parser.parse_args()
    if min(args.nights, args.invoices) < 1:
        parser.error("--nights and --invoices must be at least 1")
    os.environ.setdefault("RECON_LOG_LEVEL", "WARNING")  # the worker's own lines: warnings only
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(run(args.nights, args.invoices))


if __name__ == "__main__":
    main()
