"""What the signature check costs per decision.

    uv run python bench/decision_check.py [--checks 200] [--updates 19] [--invoices 312]

Starts its own embedded Temporal dev server and PostgreSQL in a temporary directory, seeds one
night, registers an approver, runs an in-process worker and lets the night stop at the gate. Then:

1. the check itself, as the `check_decision` activity runs it (approver lookup, Ed25519
   verification, staleness, the money at stake read from Postgres), called `--checks` times on
   one connection pool: median and 90th percentile in milliseconds; and the Ed25519
   verification alone;
2. the whole `decide` Update as a client sees it, `--updates` times each: refused by the
   validator (no activity, nothing written to the history) and refused by the check (the
   activity runs, the refusal is recorded): the difference of the medians is what the check
   adds to a decision's round trip. (At most MAX_REFUSED_PER_HANDOVER refusals are recorded per
   handover, so `--updates` stays at or below 20.)
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

from activities.decisions import DecisionActivities  # noqa: E402
from activities.resources import Resources  # noqa: E402
from recon.domain.decisions import DecisionCheck, canonical_decision  # noqa: E402
from recon.domain.signing import raw_public, verifies  # noqa: E402
from recon.ops.approvers import ensure_tool_approver, load_key, signed_decision  # noqa: E402
from recon.runtime.config import load_settings  # noqa: E402
from recon.runtime.embedded import EmbeddedPostgres, TemporalDevServer, free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store import approvers  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402

DAY, WAREHOUSE, QUEUE = "2031-04-04", "bench", "decision-check-bench"


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"median {statistics.median(ordered) * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms " \
           f"(n={len(ordered)})"


async def main(args: argparse.Namespace) -> None:
    from temporalio.client import WorkflowUpdateFailedError

    from starter import start_night
    from worker import run_worker

    state = Path(tempfile.mkdtemp(prefix="recon-decision-bench-"))
    postgres = EmbeddedPostgres(state)
    temporal = TemporalDevServer(state, port=free_port(), ui_port=free_port(), persistent=False)
    url = postgres.start()
    temporal.start()
    try:
        settings = replace(load_settings(), database_url=url, temporal_address=temporal.address,
                           task_queue=QUEUE, gate_max_total_paise=100)
        pool = await connect_pool(url, max_size=10)
        await migrate(pool)
        await seed_night(pool, DAY, WAREHOUSE, args.invoices, args.invoices // 8)
        key_file = state / "bench.pem"
        await ensure_tool_approver(pool, "bench", "bench@distributor.example", key_file)
        key = load_key(key_file)
        await approvers.add(pool, "tight", "t@x.example", "approver",
                            raw_public(load_key(_tool_key(state / "tight.pem"))), 0)
        tight = load_key(state / "tight.pem")
        client = await connect(settings)
        ready, stop = asyncio.Event(), asyncio.Event()
        worker = asyncio.create_task(run_worker(settings, ready=ready, stop=stop,
                                                with_sender=False))
        await asyncio.wait_for(ready.wait(), 60)
        handle = await start_night(client, settings, DAY, WAREHOUSE)
        while (await handle.query("progress"))["status"] != "AwaitingDecision":
            await asyncio.sleep(0.2)
        wf = handle.id

        # 1. the check, as the activity runs it
        room = DecisionActivities(Resources(pool=pool, extractor=None, settings=settings))
        checks = []
        for n in range(args.checks):
            d = await signed_decision(pool, key, run=wf, handover_no=1, decision="resume",
                                      by=None, note=f"bench {n}", park=[])
            check = DecisionCheck(
                check_id=f"bench-{n}", workflow_id=wf, night=wf, handover_no=1, via="update",
                received_at=datetime.now(UTC).isoformat(), decision=d.decision, by=d.by,
                note=d.note, park=d.park, signed_at=d.signed_at, signature=d.signature)
            began = time.perf_counter()
            verdict = await room._verdict(check)
            checks.append(time.perf_counter() - began)
            assert not verdict.refused, verdict.refused
        payload = canonical_decision(run=wf, handover_no=1, decision=d.decision, by=d.by,
                                     note=d.note, park=[], signed_at=d.signed_at)
        public = raw_public(key)
        verify = []
        for _ in range(args.checks):
            began = time.perf_counter()
            assert verifies(public, payload, d.signature)
            verify.append(time.perf_counter() - began)
        print(f"check_decision's work, {args.invoices}-invoice night at the gate: {_ms(checks)}")
        print(f"  of which the Ed25519 verification: {_ms(verify)}")

        # 2. the Update's round trip: refused by the validator vs refused by the check
        by_validator, by_check = [], []
        for n in range(args.updates):
            d = await signed_decision(pool, key, run=wf, handover_no=2, decision="resume",
                                      by=None, note=f"v{n}", park=[])
            began = time.perf_counter()
            try:
                await handle.execute_update("decide", d, result_type=str)
            except WorkflowUpdateFailedError:
                by_validator.append(time.perf_counter() - began)
            d = await signed_decision(pool, tight, run=wf, handover_no=1, decision="resume",
                                      by=None, note=f"c{n}", park=[])
            began = time.perf_counter()
            try:
                await handle.execute_update("decide", d, result_type=str)
            except WorkflowUpdateFailedError as exc:
                assert "limit" in str(exc.cause), exc.cause
                by_check.append(time.perf_counter() - began)
        print(f"decide Update refused by the validator (no activity): {_ms(by_validator)}")
        print(f"decide Update refused by the check (activity + record): {_ms(by_check)}")
        print(f"the check adds {1000 * (statistics.median(by_check) - statistics.median(by_validator)):.1f}"
              f" ms to a decision's round trip (difference of medians)")
        await handle.terminate("bench done")
        stop.set()
        await asyncio.wait_for(worker, 30)
        await pool.close()
    finally:
        temporal.stop()
        postgres.stop()
        shutil.rmtree(state, ignore_errors=True)


def _tool_key(path: Path) -> Path:
    from recon.ops.approvers import write_key_for_tools

    write_key_for_tools(path)
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=200)
    parser.add_argument("--updates", type=int, default=19)
    parser.add_argument("--invoices", type=int, default=312)
    asyncio.run(main(parser.parse_args()))
