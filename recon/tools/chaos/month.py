"""`recon chaos --nights N`: a seeded month, run night after night on the control and under faults.

Both databases get the same month (`recon seed --nights`: orders spanning nights, bills ahead of
their goods, held lines claimed nights later). The control runs its nights in order with nothing
going wrong; the other runs the same nights in the same order while the faults, dealt over the
nights, land in each (every faulted night waits before its last step until its own faults have
landed, as a single chaos night does). Then the books of the whole month are compared row by row:
every night's ledger, stock movements, outbox and parked items, the lines held and accepted
across nights, and the stock levels the month ends with.

The re-bill story is left out: a possible duplicate waits at the gate for a person, and a night
waiting for a person is a FAIL here.
"""

from __future__ import annotations

from collections.abc import Callable

from recon.domain.errors import ChaosFailed
from recon.domain.keys import workflow_id_for
from recon.tools.chaos.compare import counts, first_difference, month_snapshot
from recon.tools.chaos.plan import WAREHOUSE, ChaosPlan, schedule_month
from recon.tools.chaos.stack import ScratchStack, WorkerFleet
from recon.tools.seed_months import business_dates


async def both_months(plan: ChaosPlan, stack: ScratchStack, fleets: list[WorkerFleet],
                      say: Callable[[str], None], *, seed_both: Callable, run_night: Callable,
                      report: Callable) -> None:
    """`seed_both`, `run_night`, `report`: how `recon.tools.chaos.run` seeds the two databases,
    runs one night and reports its faults (given, so this module does not import its caller)."""
    from recon.tools.seed import seed_month

    async def month(pool, night: str) -> None:
        await seed_month(pool, plan.business_date, WAREHOUSE, plan.nights, plan.invoices,
                         plan.mismatches, plan.seed, plan.documents, rebill=False)

    await seed_both(stack, month)
    days = business_dates(plan.business_date, plan.nights)
    say(f"seeded {plan.nights} nights from {plan.business_date} ({plan.invoices} invoices, "
        f"{plan.mismatches} mismatches a night, seed {plan.seed}) into two databases")
    work = []
    for k, day in enumerate(days):
        night = await run_night("control", plan, stack, fleets, say, faults=[], day=day,
                                 label=f"control-{k + 1}")
        say(f"control night {day}: {night.outcome} in {night.finished - night.started:.1f} s")
        if night.outcome != "Completed":
            raise ChaosFailed(f"the control night {day} did not complete: {night.outcome}")
        work.append(night.progress)
    for k, (day, faults) in enumerate(zip(days, schedule_month(plan, work), strict=True)):
        night = await run_night("chaos", plan, stack, fleets, say, faults=faults, day=day,
                                 label=f"chaos-{k + 1}")
        say(f"night {day} under faults: {night.outcome} in "
            f"{night.finished - night.started:.1f} s")
        report(night, say)
        if night.outcome != "Completed":
            raise ChaosFailed(f"the night {day} under faults did not complete: {night.outcome}")
    runs = [workflow_id_for(day, WAREHOUSE) for day in days]
    expected = await month_snapshot(stack.database_url("control"), runs, WAREHOUSE)
    got = await month_snapshot(stack.database_url("chaos"), runs, WAREHOUSE)
    say(f"control:      {counts(expected)}")
    say(f"under faults: {counts(got)}")
    difference = first_difference(expected, got)
    if difference is not None:
        raise ChaosFailed(difference)
