"""The worker: serves the workflows and activities on one task queue.

A short sticky-queue timeout and heartbeat timeouts on every activity mean that when this process
dies, Temporal hands its work to another worker within seconds: the run's next workflow task
leaves a dead worker's sticky queue after 0.2 s (the SDK default is 10 s), and a busy live worker
that misses it only costs a replay on whichever worker takes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from datetime import timedelta

import structlog
from temporalio.worker import Worker

from activities.observe import ObservingInterceptor
from activities.registry import activities_for
from activities.resources import Resources
from recon.documents.extraction.choice import make_extractor
from recon.ledger import outside_ledger
from recon.mail.run import start_sender
from recon.runtime import logs, metrics
from recon.runtime.build_id import build_id
from recon.runtime.config import Settings, load_settings, remember_secrets
from recon.runtime.sandbox import compile_workflow_modules_once, workflow_runner
from recon.runtime.temporal_client import connect
from recon.store.db import connect_pool, migrate
from workflows.registry import WORKFLOWS

log = structlog.get_logger("recon.worker")

STICKY_TIMEOUT = timedelta(milliseconds=200)
# The SDK sends an activity's heartbeats at most every 0.8 x its heartbeat timeout (1.6 s of a 2 s
# timeout): a beat the ticker records after a stalled event loop could then reach Temporal too
# late. At most every 0.5 s instead, the gap Temporal sees is the ticker's (a quarter of the
# timeout, activities/step.py) plus any stall: a 1 s timeout survives a 0.75 s stall. Two
# heartbeat calls a second per running activity at most.
HEARTBEAT_THROTTLE = timedelta(milliseconds=500)

# The cyclic collector's first threshold (Python's default: every 700 net allocations). A worker
# extracting a big night holds tens of thousands of parsed invoices in flight (16 batches of
# groups), and with the default the collector rescans them every few hundred allocations: the
# offline parser ran 1.4-2x slower with its results kept than with them dropped (bench/README.md,
# 2026-12-01 12:23; the rule: docs/design.md §8). The older generations keep their default ratios.
COLLECT_EVERY = 10_000


def tune_collector() -> None:
    """Freeze what start-up allocated (imports, the SDK: never garbage) out of every collection,
    and collect the young generation less often."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(COLLECT_EVERY, older, oldest)


async def run_worker(
    settings: Settings, *, ready: asyncio.Event | None = None, stop: asyncio.Event | None = None,
    with_sender: bool = True,
) -> None:
    """Serve until SIGINT/SIGTERM (or until `stop` is set, when the caller owns the signals).
    With an SMTP_URL (and unless `with_sender` is False) the outbox sender runs here too."""
    logs.configure()
    remember_secrets(settings)  # masked by value in every text that leaves (an in-process worker)
    outside_ledger(settings)  # a RECON_LEDGER that names no usable ledger refuses here, not at step 7
    # A frozen worker must not hold a lock for long: Postgres ends any transaction of ours that
    # sits idle longer than this, so a takeover never waits on a process that cannot run.
    pool = await connect_pool(settings.database_url, max_size=20,
                              idle_transaction_seconds=max(2.0, settings.heartbeat_seconds))
    await migrate(pool)
    runtime = metrics.runtime_for(settings.metrics_port, settings.metrics_host)
    client = await connect(settings, runtime)
    resources = Resources(pool, make_extractor(settings), settings, client)
    tune_collector()
    compile_workflow_modules_once()
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=WORKFLOWS,
        workflow_runner=workflow_runner(),
        build_id=build_id(),
        activities=activities_for(resources),
        sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
        max_concurrent_activities=settings.activity_slots,
        graceful_shutdown_timeout=timedelta(seconds=5),
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        interceptors=[ObservingInterceptor()],
    )
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    gauges = None
    if runtime is not None:
        gauges = asyncio.create_task(metrics.keep_gauges(
            pool, runtime.metric_meter, settings.metrics_refresh_seconds))
    log.info("worker started", task_queue=settings.task_queue, extractor=resources.extractor.name,
             metrics_port=settings.metrics_port or None)
    sender = start_sender(settings, stop) if with_sender else None
    try:
        async with worker:
            if ready is not None:
                ready.set()
            await stop.wait()
    finally:
        if sender is not None:
            stop.set()  # also when the worker failed: the sender must not outlive it
            await sender
        if gauges is not None:
            gauges.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await gauges
        await pool.close()
    log.info("worker stopped")


if __name__ == "__main__":
    asyncio.run(run_worker(load_settings()))
