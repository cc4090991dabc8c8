"""What the signature check costs per signed request (undo, redo).

    uv run python bench/request_check.py [--checks 200] [--starts 15] [--invoices 312]

Starts its own embedded Temporal dev server and PostgreSQL in a temporary directory, seeds and
runs one night with an in-process worker, registers an approver. Then:

1. the check itself, as the `check_signed_request` activity runs it (approver lookup, Ed25519
   verification, staleness, the live ledger the undo would reverse read from Postgres, the
   signature spent in `spent_signatures`), `--checks` times, each a freshly signed undo request:
   median and 90th percentile in milliseconds; and the Ed25519 verification alone;
2. an undo started on Temporal and refused by the check (unsigned), `--starts` times, from start
   to its failure as the client sees it: the check activity is the only work it does, so this is
   the whole cost a request pays for being checked, round trip included.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from activities.requests import RequestActivities  # noqa: E402
from activities.resources import Resources  # noqa: E402
from recon.domain.models import UndoRequest  # noqa: E402
from recon.domain.requests import UNDO, RequestCheck, canonical_request  # noqa: E402
from recon.domain.signing import raw_public, verifies  # noqa: E402
from recon.ops.approvers import ensure_tool_approver, load_key  # noqa: E402
from recon.ops.requests import signed_request  # noqa: E402
from recon.runtime.config import load_settings  # noqa: E402
from recon.runtime.embedded import EmbeddedPostgres, TemporalDevServer, free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402

DAY, WAREHOUSE, QUEUE = "2031-04-05", "bench", "request-check-bench"


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"median {statistics.median(ordered) * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms " \
           f"(n={len(ordered)})"


async def main(args: argparse.Namespace) -> None:
    from temporalio.client import WorkflowFailureError
    from temporalio.common import WorkflowIDReusePolicy

    from starter import start_night
    from worker import run_worker
    from workflows.undo import UndoReconciliation

    state = Path(tempfile.mkdtemp(prefix="recon-request-bench-"))
    postgres = EmbeddedPostgres(state)
    temporal = TemporalDevServer(state, port=free_port(), ui_port=free_port(), persistent=False)
    url = postgres.start()
    temporal.start()
    try:
        settings = replace(load_settings(), database_url=url, temporal_address=temporal.address,
                           task_queue=QUEUE)
        pool = await connect_pool(url, max_size=10)
        await migrate(pool)
        await seed_night(pool, DAY, WAREHOUSE, args.invoices, args.invoices // 8)
        key_file = state / "bench.pem"
        await ensure_tool_approver(pool, "bench", "bench@distributor.example", key_file)
        key = load_key(key_file)
        client = await connect(settings)
        ready, stop = asyncio.Event(), asyncio.Event()
        worker = asyncio.create_task(run_worker(settings, ready=ready, stop=stop,
                                                with_sender=False))
        await asyncio.wait_for(ready.wait(), 60)
        wf = (await (await start_night(client, settings, DAY, WAREHOUSE)).result()).workflow_id

        # 1. the check, as the activity runs it
        room = RequestActivities(Resources(pool=pool, extractor=None, settings=settings))
        checks = []
        for n in range(args.checks):
            s = await signed_request(pool, key, UNDO, run=wf, supplier=None, references=[],
                                     reason=f"bench {n}", by=None)
            check = RequestCheck(
                check_id=f"bench-{n}", purpose=UNDO, target=f"undo-{wf}", execution=f"e{n}",
                run=wf, reason=f"bench {n}", by=s.by, signed_at=s.signed_at,
                signature=s.signature, received_at=datetime.now(UTC).isoformat())
            began = time.perf_counter()
            verdict = await room._verdict(check)
            checks.append(time.perf_counter() - began)
            assert not verdict.refused, verdict.refused
        payload = canonical_request(UNDO, run=wf, supplier=None, references=[],
                                    reason=check.reason, by=s.by, signed_at=s.signed_at)
        verify = []
        for _ in range(args.checks):
            began = time.perf_counter()
            assert verifies(raw_public(key), payload, s.signature)
            verify.append(time.perf_counter() - began)
        print(f"check_signed_request's work, {args.invoices}-invoice night: {_ms(checks)}")
        print(f"  of which the Ed25519 verification: {_ms(verify)}")

        # 2. an undo refused by the check, start to failure
        refused = []
        for n in range(args.starts):
            request = UndoRequest(run_workflow_id=wf, reason=f"r{n}", by="bench")
            began = time.perf_counter()
            handle = await client.start_workflow(
                UndoReconciliation.run, request, id=f"undo-{wf}", task_queue=QUEUE,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE)
            try:
                await handle.result()
            except WorkflowFailureError as exc:
                assert "unsigned" in str(exc.cause), exc.cause
                refused.append(time.perf_counter() - began)
        print(f"undo refused by the check, start to failure: {_ms(refused)}")
        stop.set()
        await asyncio.wait_for(worker, 30)
        await pool.close()
    finally:
        temporal.stop()
        postgres.stop()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=200)
    parser.add_argument("--starts", type=int, default=15)
    parser.add_argument("--invoices", type=int, default=312)
    asyncio.run(main(parser.parse_args()))
