"""`recon chaos`: the product's promise, checked on the user's own machine.

One seeded night runs twice on a scratch stack: once with nothing going wrong (the control), once
while workers are SIGKILLed and frozen and the Temporal and Postgres servers are restarted at
random (seeded) moments. The two nights must then be row-for-row equal. Everything it starts is
stopped and its temp dir deleted on every exit, Ctrl-C included; a global timeout bounds it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from temporalio.client import WorkflowExecutionStatus

from recon.domain.errors import ChaosFailed
from recon.runtime.config import load_settings
from recon.runtime.keyring import keyring_env
from recon.store.db import connect_pool, migrate
from recon.tools.chaos.compare import (
    counts,
    first_difference,
    repeated_requests,
    snapshot,
    sources_snapshot,
)
from recon.tools.chaos.faults import apply_faults
from recon.tools.chaos.plan import (
    EXTRACT_BATCH,
    HELD_STEP,
    POST_BATCH,
    TASK_QUEUE,
    WAREHOUSE,
    ChaosPlan,
    Fault,
    Night,
    schedule,
)
from recon.tools.chaos.stack import ScratchStack, WorkerFleet
from recon.tools.chaos.watch import Watcher


def run_chaos(plan: ChaosPlan, say: Callable[[str], None]) -> None:
    """Raises ChaosFailed with the first difference, or returns when the verdict is PASS."""
    stack = ScratchStack()
    fleets: list[WorkerFleet] = []
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        asyncio.run(asyncio.wait_for(_both_nights(plan, stack, fleets, say), plan.timeout))
    except TimeoutError:
        raise ChaosFailed(f"timed out after {plan.timeout:.0f} s (see the lines above for how far "
                          "it got)") from None
    finally:
        # A second Ctrl-C must not cut the cleanup short and leave servers behind.
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for fleet in fleets:
            fleet.close()
        stack.close()
        if plan.model == "batch":
            from recon.tools.chaos import batch_model

            batch_model.close_all()
        signal.signal(signal.SIGINT, interrupt)
        signal.signal(signal.SIGTERM, previous)


def _quiet_client_retries() -> None:
    """The Temporal client logs every retried call while its server is down on purpose: keep the
    fault log readable (errors still show)."""
    from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

    Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(
        filter=TelemetryFilter(core_level="ERROR", other_level="ERROR")))), error_if_already_set=False)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


async def _both_nights(plan: ChaosPlan, stack: ScratchStack, fleets: list[WorkerFleet],
                       say: Callable[[str], None]) -> None:
    _quiet_client_retries()
    clock = time.monotonic()
    stack.start()
    say(f"scratch stack in {stack.root}: Postgres and Temporal (port {stack.temporal.port}) up in "
        f"{time.monotonic() - clock:.1f} s")
    if plan.warehouses > 1:
        from recon.tools.chaos.warehouses import both_rounds

        await both_rounds(plan, stack, fleets, say, seed_both=seed_both, worker_env=_worker_env,
                          report=_report)
        return
    if plan.nights > 1:
        from recon.tools.chaos.month import both_months

        await both_months(plan, stack, fleets, say, seed_both=seed_both, run_night=_run_night,
                          report=_report)
        return
    went: dict[str, int] = {}
    if plan.sources:
        went = await _seed_sources(plan, stack)
        say(f"seeded {plan.invoices} invoices, {plan.mismatches} mismatches (seed {plan.seed}, "
            f"{plan.business_date}) as each night's sources: {went['exports']} ERP export files, "
            f"{went['files']} files in a drop folder, {went['mails']} mails in a Dovecot mailbox "
            f"(IMAP port {stack.mail.port})")
    else:
        await _seed(plan, stack)
        say(f"seeded {plan.invoices} invoices, {plan.mismatches} mismatches (seed {plan.seed}, "
            f"{plan.business_date}) into two databases")
    books: dict[str, dict[str, str]] = {}
    if plan.ledger == "tryton":
        from recon.tools.chaos import ledger

        for name in ("control", "chaos"):
            server, books[name] = ledger.start(stack.root / f"tryton-{name}",
                                               int(plan.business_date[:4]))
            stack.extra.append(server)
            say(f"{name} night's Tryton at {books[name]['RECON_LEDGER_URL']}")
    control = await _run_night("control", plan, stack, fleets, say, faults=[],
                               ledger_env=books.get("control"))
    say(f"control night: {control.outcome} in {control.finished - control.started:.1f} s")
    if control.outcome != "Completed":
        raise ChaosFailed(f"the control night did not complete: {control.outcome}")
    workflow_id = f"recon-{plan.business_date}-{WAREHOUSE}"
    if plan.sources:
        from recon.tools.chaos.sources import schedule_sources

        fetched = await _fetched(stack.database_url("control"), workflow_id)
        say(f"control night fetched {fetched['settled']} items ({fetched['documents']} documents)")
        faults = schedule_sources(plan, control.progress, fetched["settled"], plan.mail_outage)
    else:
        faults = schedule(plan, control.progress)
    chaos = await _run_night("chaos", plan, stack, fleets, say, faults=faults,
                             ledger_env=books.get("chaos"))
    took = chaos.finished - chaos.started
    say(f"night under faults: {chaos.outcome} in {took:.1f} s")
    _report(chaos, say)
    if plan.sources:
        # Work below the items the control's fetch settled: the fetch had not finished then.
        early = [f for f in chaos.faults if f.target and f.work < fetched["settled"]]
        say(f"{len(early)} faults landed during the fetch ({', '.join(f.kind for f in early)})")
    if chaos.outcome != "Completed":
        raise ChaosFailed(f"the night under faults did not complete: {chaos.outcome}")
    expected = await snapshot(stack.database_url("control"), workflow_id)
    got = await snapshot(stack.database_url("chaos"), workflow_id)
    if plan.sources:
        await _each_once(stack.database_url("chaos"), workflow_id, went, say)
        expected.update(await sources_snapshot(stack.database_url("control"), WAREHOUSE))
        got.update(await sources_snapshot(stack.database_url("chaos"), WAREHOUSE))
    say(f"control:      {counts(expected)}")
    say(f"under faults: {counts(got)}")
    difference = first_difference(expected, got)
    if difference is not None and difference.startswith("model_calls"):
        for invoice, moments in await repeated_requests(stack.database_url("chaos"), workflow_id):
            offsets = ", ".join(f"{(m.timestamp() - chaos.wall_started):.1f}s" for m in moments)
            say(f"  {invoice} sent to the model at {offsets}")
    if difference is not None:
        raise ChaosFailed(difference)
    if plan.model == "batch":
        from recon.tools.chaos import batch_model

        await batch_model.check_batches(stack.database_url, workflow_id, say)
    if books:
        say(ledger.compare(await ledger.books(books["control"]), await ledger.books(books["chaos"])))


async def _seed_sources(plan: ChaosPlan, stack: ScratchStack) -> dict[str, int]:
    """Each night's world (recon/tools/chaos/sources.py): what went where, the same for both."""
    from recon.tools.chaos import sources

    stack.mail = await asyncio.to_thread(sources.start_mail_server, stack.root)
    went: dict[str, dict[str, int]] = {}

    async def world(pool, night: str) -> None:
        went[night] = await sources.seed_sources(pool, plan, night, stack.root, stack.mail)

    await seed_both(stack, world)
    return went["chaos"]


async def _fetched(url: str, workflow_id: str):
    import asyncpg

    from recon.store.chaos import fetched_items

    conn = await asyncpg.connect(url, timeout=10)
    try:
        return await fetched_items(conn, workflow_id, WAREHOUSE)
    finally:
        await conn.close()


async def _each_once(url: str, workflow_id: str, went: dict[str, int],
                     say: Callable[[str], None]) -> None:
    """Every item of the night's sources settled once, none left pending, and the warehouse holds
    exactly the documents the items imported (a document imported twice, or recorded and not
    imported, shows here as well as in the row comparison)."""
    fetched = await _fetched(url, workflow_id)
    items = went["exports"] + went["files"] + went["mails"]
    say(f"under faults: {fetched['settled']} of {items} items settled, {fetched['pending']} "
        f"pending, {fetched['documents']} documents imported, {fetched['invoices']} invoices held")
    if fetched["pending"] or fetched["settled"] != items:
        raise ChaosFailed(f"the sources' items are not each taken once: {fetched['settled']} "
                          f"settled and {fetched['pending']} pending of {items}")
    if fetched["documents"] != fetched["invoices"]:
        raise ChaosFailed(f"{fetched['documents']} documents imported by the fetch, but the "
                          f"warehouse holds {fetched['invoices']} invoices")


async def _seed(plan: ChaosPlan, stack: ScratchStack) -> None:
    from recon.tools.seed import seed_night

    async def one_night(pool, night: str) -> None:
        await seed_night(pool, plan.business_date, WAREHOUSE, plan.invoices, plan.mismatches,
                         plan.seed, plan.documents)

    await seed_both(stack, one_night)


async def seed_both(stack: ScratchStack, write: Callable) -> None:
    """The two databases, migrated, each with the chaos approver, then `write(pool, night)` in
    each."""
    import asyncpg

    from recon.ops.approvers import ensure_tool_approver
    from recon.store.chaos import create_database

    admin = await asyncpg.connect(stack.postgres.url)
    try:
        for night in ("control", "chaos"):
            await create_database(admin, night)
    finally:
        await admin.close()
    for night in ("control", "chaos"):
        pool = await connect_pool(stack.database_url(night), max_size=2)
        try:
            await migrate(pool)
            # Its own approver (the same key in both databases): a night of chaos that hands
            # over is a FAIL, but whoever reads it on the scratch stack decides with this key.
            await ensure_tool_approver(pool, "chaos", "chaos@distributor.example",
                                       stack.root / "chaos-approver.pem")
            await write(pool, night)
        finally:
            await pool.close()


def _worker_env(stack: ScratchStack, night: str, plan: ChaosPlan, hold: Path | None,
                ledger_env: dict[str, str] | None = None) -> dict[str, str]:
    """The workers' environment. `hold`: the night under faults waits before its last step until
    this file exists, which the fault injector writes when every planned fault has landed: the
    faults land whether the machine is fast or slow (the control night's work sets the moments)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "OPENAI_"))
           and k not in ("DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE")}
    env.update(DATABASE_URL=stack.database_url(night), TEMPORAL_ADDRESS=stack.temporal.address,
               TEMPORAL_NAMESPACE=night, RECON_TASK_QUEUE=TASK_QUEUE,
               RECON_HOME=str(stack.root / "home"), PYTHONUNBUFFERED="1")
    if hold is not None:
        env.update(RECON_FAILPOINTS=f"before:{HELD_STEP}:hold", RECON_FAILPOINT_RELEASE=str(hold))
    settings = load_settings()  # the workers encrypt as this process does (or not at all)
    env.update(keyring_env(settings.payload_keyring, settings.payload_keys_file))
    env.update(ledger_env or {})
    if plan.model == "batch":
        from recon.tools.chaos import batch_model

        env.update(batch_model.worker_env(night))
    return env


async def _run_night(name: str, plan: ChaosPlan, stack: ScratchStack, fleets: list[WorkerFleet],
                     say: Callable[[str], None], faults: list[Fault], day: str | None = None,
                     label: str | None = None, ledger_env: dict[str, str] | None = None) -> Night:
    """One night of the `name` database and namespace (`day`: its date, by default the plan's;
    `label`: names its logs and release file, by default `name`)."""
    from recon.runtime.temporal_client import connect
    from starter import start_night

    logs = stack.root / f"logs-{label or name}"
    logs.mkdir()
    release = stack.root / f"release-{label or name}" if faults else None
    fleet = WorkerFleet(_worker_env(stack, name, plan, release, ledger_env), logs,
                        size=plan.workers)
    fleets.append(fleet)
    fleet.top_up()
    await fleet.wait_ready()
    settings = replace(load_settings(), temporal_address=stack.temporal.address,
                       temporal_namespace=name, database_url=stack.database_url(name),
                       task_queue=TASK_QUEUE, heartbeat_seconds=plan.heartbeat_seconds,
                       extract_batch_size=EXTRACT_BATCH, post_batch_size=POST_BATCH,
                       **_model_settings(plan))
    client = await connect(settings)
    handle = await start_night(client, settings, day or plan.business_date, WAREHOUSE)
    night = Night(name, fleet, started=time.monotonic(), wall_started=time.time(), faults=faults)
    watcher = Watcher(client, settings.database_url, handle.id)
    breaking = asyncio.ensure_future(asyncio.gather(
        apply_faults(night, stack, plan, say, release),
        *_batch_faults(plan, night, settings.database_url, handle.id, say)))
    try:
        await _watch(night, watcher, say)
        breaking.cancel()
        woken = fleet.thaw_all()
        for worker in woken:
            say(f"{_t(night)} thaw {worker.name} (pid {worker.pid}) after the run finished")
        if woken:  # a stale worker that wakes now must not write or pay for anything: give it time
            await asyncio.sleep(2 * plan.heartbeat_seconds + 1)
    finally:
        breaking.cancel()
        await asyncio.gather(breaking, return_exceptions=True)
        await watcher.close()
        fleet.close()
    if faults:
        _stale_lines(logs, say)
    return night


def _batch_faults(plan: ChaosPlan, night: Night, url: str, workflow_id: str,
                  say: Callable[[str], None]) -> list:
    """`--model batch`, the night under faults: a kill that lands in the batch's wait too."""
    if plan.model != "batch" or not night.faults:
        return []
    from recon.tools.chaos import batch_model

    return [batch_model.kill_while_waiting(night, url, workflow_id, say)]


def _model_settings(plan: ChaosPlan) -> dict:
    """The run input's model mode (`--model batch`: recon/tools/chaos/batch_model.py)."""
    if plan.model != "batch":
        return {}
    from recon.tools.chaos import batch_model

    return batch_model.run_settings()


def _stale_lines(logs, say: Callable[[str], None], most: int = 10) -> None:
    """Quote what the workers said about stale attempts: the evidence when fencing misfires."""
    seen: list[str] = []
    for log in sorted(logs.glob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if "StaleAttempt" in line and line.strip() not in seen:
                seen.append(line.strip())
                if len(seen) <= most:
                    say(f"  {log.stem}: {line.strip()[:300]}")
    if len(seen) > most:
        say(f"  ... {len(seen) - most} more StaleAttempt lines")


async def _watch(night: Night, watcher: Watcher, say: Callable[[str], None]) -> None:
    """Poll until the run ends or waits for a person; keep the fleet topped up meanwhile."""
    done = {WorkflowExecutionStatus.COMPLETED: "Completed", WorkflowExecutionStatus.FAILED: "Failed",
            WorkflowExecutionStatus.TERMINATED: "Terminated", WorkflowExecutionStatus.CANCELED:
            "Canceled", WorkflowExecutionStatus.TIMED_OUT: "TimedOut"}
    while True:
        for worker in night.fleet.exited():
            say(f"{_t(night)} {worker.name} exited by itself (code {worker.process.returncode})")
        for worker in night.fleet.thaw_due():
            say(f"{_t(night)} thaw {worker.name} (pid {worker.pid}): SIGCONT")
        for worker in night.fleet.top_up():
            say(f"{_t(night)} start {worker.name} (pid {worker.pid})")
        look = await watcher.look()
        now = time.monotonic() - night.started
        moved = watcher.moved(look)
        night.progress = sum(watcher.best)
        if moved:
            for fault in night.faults:
                if fault.target and fault.progress_after is None and fault.at <= now:
                    fault.progress_after = now - fault.at
        if look.status in done:
            night.finished, night.outcome = time.monotonic(), done[look.status]
            break
        if look.handover is not None:
            night.finished = time.monotonic()
            night.outcome = f"handed over to a person at {look.handover}"
            break
        await asyncio.sleep(0.25)
    for fault in night.faults:
        if fault.target:
            fault.finished_after = night.finished - night.started - fault.at


def _t(night: Night) -> str:
    return f"[{time.monotonic() - night.started:6.1f}s]"


def _report(night: Night, say: Callable[[str], None]) -> None:
    applied = [f for f in night.faults if f.target]
    skipped = len(night.faults) - len(applied)
    missed = ", ".join(f.kind for f in night.faults if not f.target)
    say(f"{len(applied)} faults applied" + (f", {skipped} not (the run finished first: {missed})"
                                            if skipped else ""))
    for f in applied:
        progress = "never" if f.progress_after is None else f"{f.progress_after:5.1f} s"
        say(f"  {f.at:6.1f}s {f.kind:8} {f.target:32} crash → progress {progress}, "
            f"crash → finished {f.finished_after:5.1f} s")
    for kind in ("kill", "freeze", "temporal", "postgres", "mail"):
        progress = sorted(f.progress_after for f in applied if f.kind == kind and f.progress_after
                          is not None)
        if progress:
            say(f"  {kind}: median crash → progress {progress[len(progress) // 2]:.1f} s, "
                f"max {progress[-1]:.1f} s")
