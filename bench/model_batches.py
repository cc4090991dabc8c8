"""Batch mode against interactive mode: the bill and the wall time of one night in each.

Runs whole nights on the embedded stack against the loopback Batch API server
(`tests/fakes/batch_server.py`, in this process), which answers an interactive request after
`--delay` seconds and a batch's lines evenly over `--completion` seconds; prices are
RECON_MODEL_PRICE_IN/OUT 0.15/0.60 USD per million tokens, the batch at the default factor 0.5.
The two nights are seeded alike on two dates (their documents differ by a few characters), so the
bill is also compared per token.

    uv run python bench/model_batches.py [--invoices 10000 --delay 0.2 --completion 30]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recon.ops.inspection import inspect_run  # noqa: E402
from recon.runtime.config import MAX_PAISE  # noqa: E402
from recon.runtime.devstack import embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402
from tests.fakes.batch_server import BatchOpenAI  # noqa: E402
from tests.fakes.openai_server import API_KEY, MODEL  # noqa: E402

WAREHOUSE = "ldh"
FIRST_DATE = date(2033, 1, 1)


async def night(stack, client, pool, fake: BatchOpenAI, day: str, invoices: int, mode: str) -> tuple[
        float, dict]:
    from starter import start_night
    from worker import run_worker

    await seed_night(pool, day, WAREHOUSE, invoices, max(1, invoices // 50), 7)
    settings = replace(
        stack.settings(), task_queue=f"bench-batch-{uuid.uuid4().hex[:8]}", warehouse=WAREHOUSE,
        openai_api_key=API_KEY, openai_base_url=fake.base_url, model=MODEL, failpoints="",
        model_price_in=0.15, model_price_out=0.60, model_mode=mode, model_batch_poll_seconds=2.0,
        gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0, gate_max_total_paise=MAX_PAISE,
        gate_max_supplier_paise=MAX_PAISE,
    )
    ready, stop = asyncio.Event(), asyncio.Event()
    worker = asyncio.create_task(run_worker(settings, ready=ready, stop=stop))
    try:
        await asyncio.wait_for(ready.wait(), 60)
        began = time.monotonic()
        handle = await start_night(client, settings, day, WAREHOUSE)
        result = await handle.result()
        seconds = time.monotonic() - began
    finally:
        stop.set()
        await asyncio.wait_for(worker, 60)
    if result.status != "Completed":
        raise SystemExit(f"night {day} ended {result.status}")
    return seconds, await inspect_run(client, pool, handle.id)


async def run(args: argparse.Namespace) -> None:
    state = Path(tempfile.mkdtemp(prefix="recon-bench-batch-"))
    try:
        with embedded_stack(state, port=free_port(), ui_port=free_port(), persistent=False) as stack:
            pool = await connect_pool(stack.postgres.url, max_size=4)
            await migrate(pool)
            client = await connect(stack.settings())
            found = {}
            for n, mode in enumerate(("batch", "interactive")):
                with BatchOpenAI(completion_delay=args.completion, delay=args.delay) as fake:
                    seconds, facts = await night(stack, client, pool, fake,
                                                 str(FIRST_DATE + timedelta(days=n)),
                                                 args.invoices, mode)
                    billed = sum(fake.billed().values())
                found[mode] = facts
                print(f"{mode:>11}: {args.invoices:,} invoices, {facts['model_requests']:,} "
                      f"requests ({billed:,} billed by the server, {fake.creates} batch created), "
                      f"{facts['model_tokens']:,} tokens, US${facts['model_cost_usd']:.4f}, "
                      f"night {seconds:.1f} s", flush=True)
            ratio = found["batch"]["model_cost_usd"] / found["interactive"]["model_cost_usd"]
            per_token = ((found["batch"]["model_cost_usd"] / found["batch"]["model_tokens"])
                         / (found["interactive"]["model_cost_usd"]
                            / found["interactive"]["model_tokens"]))
            print(f"batch / interactive bill: {ratio:.3f} (per token {per_token:.3f}); interactive "
                  f"answer delay {args.delay} s, batch completion delay {args.completion} s")
            await pool.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--invoices", type=int, default=10_000)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--completion", type=float, default=30.0)
    logging.basicConfig(level=logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(run(parser.parse_args()))
