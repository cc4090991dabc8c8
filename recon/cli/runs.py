"""Commands about runs: `recon run`, `status`, `inspect`."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import date
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from recon.cli.common import (
    business_date,
    checked_run_id,
    console,
    database,
    err,
    fail,
    one_line,
    temporal,
    user_errors,
    warehouse_code,
)
from recon.domain.errors import DatabaseUnavailable, Refused
from recon.domain.printable import printable
from recon.runtime.config import load_settings


@user_errors
def run(
    date_: Annotated[str, typer.Option("--date", help="Business date, YYYY-MM-DD.")],
    warehouse: Annotated[str | None, typer.Option(help="Warehouse code.")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the run and print its summary.")] = False,
) -> None:
    """Start (or attach to) the night's run."""
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from recon.domain.keys import workflow_id_for
    from recon.store import sources
    from recon.store.held_lines import open_holds_before
    from recon.store.invoices import invoices_waiting
    from starter import start_night

    settings = load_settings()
    day, wh = business_date(date_), warehouse_code(warehouse or settings.warehouse)

    async def go():
        async with database() as pool:
            have = await invoices_waiting(pool, date.fromisoformat(day), wh)
            held = 0 if have else await open_holds_before(
                pool, workflow_id_for(day, wh), wh, date.fromisoformat(day))
            # A warehouse with sources fetches its night's invoices in step 1 (docs/sources.md).
            fetched = bool(have or held) or bool(await sources.for_warehouse(pool, wh))
        if not fetched:
            # A quiet night still runs when earlier nights hold lines it must weigh (issue 38).
            raise Refused(f"nothing to reconcile for {day} at {wh}: no invoices for the night, "
                          f"no held lines waiting and no sources; `recon import FOLDER --date "
                          f"{day} --warehouse {wh}` brings the night's invoices, `recon source "
                          f"add {wh} URL` a mailbox or folder each night fetches")
        client = await temporal()
        try:
            handle = await start_night(client, settings, day, wh, invoices=have)
        except WorkflowAlreadyStartedError:
            raise Refused(
                f"the run for {day} at {wh} already finished: see `recon inspect "
                f"{workflow_id_for(day, wh)}`; to post it again, undo it (`recon undo`) then "
                f"`recon redo`"
            ) from None
        console.print(f"run {handle.id} started (Web UI: workflow {handle.id})")
        from recon.runtime.temporal_client import has_workers

        if not await has_workers(client, settings.temporal_namespace, settings.task_queue):
            err.print(one_line(
                f"warning: no worker is polling task queue {settings.task_queue!r} yet; "
                "the run waits until one starts (`recon worker` or `recon dev`)"),
                markup=False, highlight=False)
        if wait:
            return await wait_for(handle)
        return None

    summary = asyncio.run(go())
    if summary is not None:
        print_summary(summary)


async def wait_for(handle):
    """The run's summary; or, when the run stops for a person, one line and its own exit code."""
    from temporalio.client import WorkflowFailureError

    from recon.domain.models import RunSummary
    from recon.ops.waiting import AWAITING_DECISION_EXIT, AwaitingDecision, result_or_handover

    try:
        outcome = await result_or_handover(handle, RunSummary)
    except WorkflowFailureError as exc:
        # a redo whose signed request was refused (workflows/requests.py) did nothing: say so
        verb = "refused" if getattr(exc.cause, "type", "") == "RequestRefused" else "failed"
        raise Refused(f"run {handle.id} {verb}: {exc.cause}") from None
    if isinstance(outcome, AwaitingDecision):
        fail(outcome.line(), AWAITING_DECISION_EXIT)
    return outcome


def print_summary(summary) -> None:
    table = Table(title=f"Run {summary.workflow_id}: {summary.status}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for label, value in [
        ("invoices", summary.invoices), ("parked items", summary.parked),
        ("mismatches", summary.mismatches), ("ledger entries", summary.ledger_posted),
        ("adjustment total", summary.adjustments_in_words()),
        ("stock movements", summary.stock_movements), ("debit notes", summary.debit_notes),
    ]:
        table.add_row(label, str(value))
    console.print(table)


@user_errors
def status(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """Where a run (or an undo/redo of it) stands: Temporal's and the business status, the
    current step, and what the ledger holds for it. Needs no worker."""
    from recon.ops.status import run_status

    wid = checked_run_id(run_id)

    async def go():
        async with database() as pool:
            return await run_status(await temporal(), pool, wid)

    for line in asyncio.run(go()).lines():
        console.print(printable(line), markup=False, highlight=False)
    _print_sources(wid)
    _print_delivery(wid)
    _print_outside_ledger(wid)
    console.print(_model_bill_line(wid), markup=False, highlight=False)


def _print_sources(wid: str) -> None:
    """What the night fetched from each source (recon/sources/report.py; skipped without Postgres)."""
    from recon.sources.report import night_lines

    async def go():
        async with database() as pool:
            return await night_lines(pool, wid)

    try:
        lines = asyncio.run(go())
    except DatabaseUnavailable:
        return
    for line in lines:
        console.print(printable(line), markup=False, highlight=False)


def _print_outside_ledger(wid: str) -> None:
    """The entries' state in the outside ledger, when there is one (skipped without Postgres)."""
    from recon.ops.inspection import outside_ledger_line

    async def go():
        async with database() as pool:
            return await outside_ledger_line(pool, wid)

    try:
        line = asyncio.run(go())
    except DatabaseUnavailable:
        return
    if line:
        console.print(printable(line), markup=False, highlight=False)


def _print_delivery(wid: str) -> None:
    """Debit notes delivered / pending / failed, from the outbox (skipped without Postgres)."""
    from recon.mail.report import delivery

    async def go():
        async with database() as pool:
            return await delivery(pool, wid)

    try:
        console.print(asyncio.run(go()).line(), markup=False, highlight=False)
    except DatabaseUnavailable:
        pass


def _model_bill_line(wid: str) -> str:
    """The bill so far, or why it cannot be read (`recon status` still answers)."""
    from recon.store.model_bill import model_bill

    async def go() -> str:
        async with database(migrated=False, max_size=1) as pool:
            bill = await model_bill(pool, wid)
            waiting = bill.waiting()
            return bill.line() + (f"\n{waiting[0].upper()}{waiting[1:]}" if waiting else "")

    try:
        return asyncio.run(go())
    except DatabaseUnavailable as exc:
        return f"Model bill: unknown ({exc})"


@user_errors
def inspect(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    references: Annotated[bool, typer.Option(
        "--references", help="List every ledger entry of the run, live or reversed.")] = False,
) -> None:
    """Everything a run wrote and how often its steps were retried."""
    from recon.ops.inspection import inspect_run, ledger_lines

    wid = checked_run_id(run_id)
    if references:
        async def refs():
            async with database() as pool:
                return await ledger_lines(pool, wid)

        for line in asyncio.run(refs()):
            console.print(printable(line), markup=False, highlight=False)
        return

    async def go():
        async with database() as pool:
            return await inspect_run(await temporal(), pool, wid)

    facts = asyncio.run(go())
    if as_json:
        sys.stdout.write(json.dumps(facts, default=str) + "\n")
        return
    table = Table(title=f"{wid}")
    table.add_column("fact")
    table.add_column("value", justify="right")
    for key, value in facts.items():
        if key != "steps":
            table.add_row(Text(printable(key)), Text(printable(value)))
    console.print(table)
