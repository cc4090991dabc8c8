"""`recon chaos --warehouses N`: N warehouses' nights started together, as the 02:00 schedules start
them, on one task queue and one worker fleet, first with nothing going wrong (the control), then
while workers are killed and frozen and the Temporal and Postgres servers restarted.

The head office has the plan's invoices, each branch a tenth (at least one), each night a tenth of
its invoices adjusted. The faults land at moments of the nights' work taken together (rows written
and history events, summed over the nights), between 2 % and 60 % of what the control did; every
night under faults waits before its last step until every fault has landed. PASS when each night
equals its own control row for row.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace

from temporalio.client import WorkflowExecutionStatus

from recon.domain.errors import ChaosFailed
from recon.domain.keys import workflow_id_for
from recon.runtime.config import load_settings
from recon.tools.chaos.compare import counts, first_difference, snapshot
from recon.tools.chaos.faults import apply_faults
from recon.tools.chaos.plan import (
    EXTRACT_BATCH,
    POST_BATCH,
    TASK_QUEUE,
    ChaosPlan,
    Fault,
    Night,
    schedule,
)
from recon.tools.chaos.stack import ScratchStack, WorkerFleet
from recon.tools.chaos.watch import Watcher

DONE = {WorkflowExecutionStatus.COMPLETED: "Completed", WorkflowExecutionStatus.FAILED: "Failed",
        WorkflowExecutionStatus.TERMINATED: "Terminated", WorkflowExecutionStatus.CANCELED: "Canceled",
        WorkflowExecutionStatus.TIMED_OUT: "TimedOut"}


def sizes(plan: ChaosPlan) -> dict[str, tuple[int, int]]:
    """Warehouse -> (invoices, adjustments): the head office and its branches at a tenth."""
    branch = max(1, plan.invoices // 10)
    out = {}
    for k in range(plan.warehouses):
        invoices = plan.invoices if k == 0 else branch
        mismatches = plan.mismatches if k == 0 else min(invoices, plan.mismatches // 10)
        out[f"chaos{k + 1:02d}"] = (invoices, mismatches)
    return out


async def both_rounds(plan: ChaosPlan, stack: ScratchStack, fleets: list[WorkerFleet],
                      say: Callable[[str], None], *, seed_both: Callable, worker_env: Callable,
                      report: Callable) -> None:
    """`seed_both`, `worker_env`, `report`: as `recon.tools.chaos.run` seeds the two databases,
    makes the workers' environment and reports a night's faults (given, so this module does not
    import its caller)."""
    from recon.tools.seed import seed_night

    houses = sizes(plan)

    async def seed(pool, night: str) -> None:
        for warehouse, (invoices, mismatches) in houses.items():
            await seed_night(pool, plan.business_date, warehouse, invoices, mismatches, plan.seed,
                             plan.documents)

    await seed_both(stack, seed)
    say(f"seeded {len(houses)} warehouses' nights of {plan.business_date} (head office "
        f"{plan.invoices} invoices, {len(houses) - 1} branches of {max(1, plan.invoices // 10)}; "
        f"seed {plan.seed}) into two databases")
    control = await _together("control", plan, stack, fleets, say, [], houses, worker_env)
    say(f"control: {len(houses)} nights {control.outcome} in "
        f"{control.finished - control.started:.1f} s")
    if control.outcome != "Completed":
        raise ChaosFailed(f"the control nights did not complete: {control.outcome}")
    chaos = await _together("chaos", plan, stack, fleets, say, schedule(plan, control.progress),
                            houses, worker_env)
    say(f"{len(houses)} nights under faults: {chaos.outcome} in "
        f"{chaos.finished - chaos.started:.1f} s")
    report(chaos, say)
    if chaos.outcome != "Completed":
        raise ChaosFailed(f"the nights under faults did not complete: {chaos.outcome}")
    for warehouse in houses:
        run = workflow_id_for(plan.business_date, warehouse)
        expected = await snapshot(stack.database_url("control"), run)
        got = await snapshot(stack.database_url("chaos"), run)
        difference = first_difference(expected, got)
        say(f"{warehouse}: {counts(got)}: " + ("equal to its control" if difference is None
                                               else f"DIFFERS: {difference}"))
        if difference is not None:
            raise ChaosFailed(f"{warehouse}: {difference}")


async def _together(name: str, plan: ChaosPlan, stack: ScratchStack, fleets: list[WorkerFleet],
                    say: Callable[[str], None], faults: list[Fault],
                    houses: dict[str, tuple[int, int]], worker_env: Callable) -> Night:
    """Every warehouse's night of the `name` database started at once on one fleet; returns when
    all have finished (or one waits for a person)."""
    from recon.runtime.temporal_client import connect
    from starter import start_night

    logs = stack.root / f"logs-{name}"
    logs.mkdir()
    release = stack.root / f"release-{name}" if faults else None
    fleet = WorkerFleet(worker_env(stack, name, plan, release), logs, size=plan.workers)
    fleets.append(fleet)
    fleet.top_up()
    await fleet.wait_ready()
    settings = replace(load_settings(), temporal_address=stack.temporal.address,
                       temporal_namespace=name, database_url=stack.database_url(name),
                       task_queue=TASK_QUEUE, heartbeat_seconds=plan.heartbeat_seconds,
                       extract_batch_size=EXTRACT_BATCH, post_batch_size=POST_BATCH)
    client = await connect(settings)
    handles = [await start_night(client, settings, plan.business_date, w) for w in houses]
    night = Night(name, fleet, started=time.monotonic(), wall_started=time.time(), faults=faults)
    watchers = [Watcher(client, settings.database_url, h.id) for h in handles]
    breaking = asyncio.ensure_future(apply_faults(night, stack, plan, say, release))
    try:
        await _watch(night, watchers, say)
        breaking.cancel()
        woken = fleet.thaw_all()
        for worker in woken:
            say(f"thaw {worker.name} (pid {worker.pid}) after the nights finished")
        if woken:  # a stale worker that wakes now must not write or pay for anything
            await asyncio.sleep(2 * plan.heartbeat_seconds + 1)
    finally:
        breaking.cancel()
        await asyncio.gather(breaking, return_exceptions=True)
        for watcher in watchers:
            await watcher.close()
        fleet.close()
    return night


async def _watch(night: Night, watchers: list[Watcher], say: Callable[[str], None]) -> None:
    """Poll every night until all have ended (or one waits for a person); the fleet topped up."""
    ended: dict[str, str] = {}
    while True:
        stamp = f"[{time.monotonic() - night.started:6.1f}s]"
        for worker in night.fleet.exited():
            say(f"{stamp} {worker.name} exited by itself (code {worker.process.returncode})")
        for worker in night.fleet.thaw_due():
            say(f"{stamp} thaw {worker.name} (pid {worker.pid}): SIGCONT")
        for worker in night.fleet.top_up():
            say(f"{stamp} start {worker.name} (pid {worker.pid})")
        moved = False
        for watcher in watchers:
            if watcher.workflow_id in ended:
                continue
            look = await watcher.look()
            moved |= watcher.moved(look)
            if look.status in DONE:
                ended[watcher.workflow_id] = DONE[look.status]
            elif look.handover is not None:
                ended[watcher.workflow_id] = f"handed over to a person at {look.handover}"
        night.progress = sum(sum(w.best) for w in watchers)
        now = time.monotonic() - night.started
        if moved:
            for fault in night.faults:
                if fault.target and fault.progress_after is None and fault.at <= now:
                    fault.progress_after = now - fault.at
        if len(ended) == len(watchers):
            break
        await asyncio.sleep(0.25)
    night.finished = time.monotonic()
    wrong = {run: outcome for run, outcome in ended.items() if outcome != "Completed"}
    night.outcome = "Completed" if not wrong else "; ".join(f"{r}: {o}" for r, o in wrong.items())
    for fault in night.faults:
        if fault.target:
            fault.finished_after = night.finished - night.started - fault.at
