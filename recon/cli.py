"""The `recon` command. Every command gives one clear line and a non-zero exit on bad input, a
missing server or an unknown run; no traceback for a user mistake."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import sys
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from recon.config import load_settings, state_dir
from recon.errors import DatabaseUnavailable, Refusal, Refused
from recon.store.db import connect_pool, migrate

app = typer.Typer(
    help="recon: crash-proof nightly reconciliation of supplier invoices on Temporal.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Piped output (scripts, CI) gets a wide console so ids are never wrapped mid-word.
console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)

MAX_PORT = 65_535
MAX_SEED_INVOICES = 1_000_000  # the largest night the product is measured at, with room to spare
MAX_SEED_VALUE = 2**63 - 1

# Every refusal of the product is a `Refusal` (recon/errors.py). Input a parser refuses (settings,
# amounts, time zones, pydantic models, modules that still raise the builtins) arrives as a plain
# ValueError or LookupError and is one line too.
USER_FACING = (Refusal, ValueError, LookupError)

def _one_line(message: str) -> str:
    """Control characters shown escaped (a newline as `\\n`), so a name with a line break in it
    cannot cut the error line short or forge a second one."""
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
        for ch in message
    )


def _fail(message: str, code: int = 1) -> None:
    err.print(f"error: {_one_line(message)}", markup=False, highlight=False)
    raise typer.Exit(code)


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_FACING as exc:
            _fail(str(exc) or type(exc).__name__)
        except KeyboardInterrupt:
            _fail("interrupted", 130)

    return wrapper


def _date(value: str) -> str:
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise Refused(f"--date must be YYYY-MM-DD, got {value!r}") from None


def _warehouse(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,31}", value):
        raise Refused(f"--warehouse must be a short code of a-z, 0-9, '-' or '_', got {value!r}")
    return value


def _run_id(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,200}", value):
        raise Refused(f"not a run id: {value!r} (runs look like recon-2026-10-13-ldh)")
    return value


async def _pool():
    pool = await connect_pool(load_settings().database_url)
    await migrate(pool)
    return pool


async def _client():
    from recon.temporal_client import connect

    return await connect(load_settings())


# ---------------------------------------------------------------------------------- the stack
@app.command()
@user_errors
def dev(
    no_worker: Annotated[bool, typer.Option("--no-worker", help="Start the servers only.")] = False,
    port: Annotated[int, typer.Option(help="Temporal gRPC port.", min=1, max=MAX_PORT)] = 7233,
    ui_port: Annotated[int, typer.Option(help="Temporal Web UI port.", min=1, max=MAX_PORT)] = 8233,
    schedule: Annotated[bool, typer.Option(
        "--schedule", help="Also create a demo nightly schedule for RECON_WAREHOUSE.")] = False,
) -> None:
    """Run the embedded stack (Temporal + Web UI, Postgres, a worker) until Ctrl-C or SIGTERM."""
    from recon.devstack import run_dev

    if port == ui_port:
        raise Refused(f"--port and --ui-port must differ, both are {port}")

    def announce(stack) -> None:
        console.print(f"Temporal  {stack.temporal.address}   Web UI {stack.ui_url}")
        console.print(f"Postgres  {stack.postgres.url}")
        if stack.mail is not None:
            console.print(f"Mail      {stack.mail.url}   every message kept in "
                          f"{stack.mail.handler.maildir}/new (Maildir)")
        console.print(f"settings written to {state_dir() / 'env'}; "
                      + ("worker running." if not no_worker else "no worker.")
                      + " Ctrl-C stops everything.")
        if schedule:
            from recon.schedules import ensure_demo_schedule

            console.print(asyncio.run(ensure_demo_schedule(stack.settings())))

    run_dev(state_dir(), port, ui_port, not no_worker, announce,
            say=functools.partial(console.print, markup=False, highlight=False))
    console.print("stopped")


@app.command()
@user_errors
def worker(
    no_sender: Annotated[bool, typer.Option(
        "--no-sender", help="Do not deliver the outbox from this process.")] = False,
) -> None:
    """Run a worker against TEMPORAL_ADDRESS / DATABASE_URL (or .recon/env); with SMTP_URL set it
    also delivers the outbox unless --no-sender."""
    from worker import run_worker

    asyncio.run(run_worker(load_settings(), with_sender=not no_sender))


@app.command()
@user_errors
def sender(
    lanes: Annotated[int | None, typer.Option(help="Messages in flight at once.")] = None,
) -> None:
    """Deliver the outbox over SMTP (SMTP_URL) until Ctrl-C or SIGTERM."""
    from recon.mail.run import run_sender

    asyncio.run(run_sender(load_settings(), lanes))


# ---------------------------------------------------------------------------------- data
@app.command()
@user_errors
def seed(
    date_: Annotated[str, typer.Option("--date", help="Business date, YYYY-MM-DD.")],
    warehouse: Annotated[str, typer.Option(help="Warehouse code, e.g. ldh.")],
    invoices: Annotated[int, typer.Option(
        help="Invoices in the night.", min=1, max=MAX_SEED_INVOICES)] = 312,
    mismatches: Annotated[int, typer.Option(
        help="Adjustments the night needs (at most --invoices).", min=0,
        max=MAX_SEED_INVOICES)] = 40,
    seed_: Annotated[int, typer.Option("--seed", help="Random seed.", min=0,
                                       max=MAX_SEED_VALUE)] = 7,
) -> None:
    """Create a deterministic, realistic night of invoices, orders and receipts."""
    from recon.seed import seed_night

    day, wh = _date(date_), _warehouse(warehouse)
    if mismatches > invoices:
        raise Refused(f"--mismatches {mismatches} is more than --invoices {invoices}")

    async def go():
        pool = await _pool()
        try:
            return await seed_night(pool, day, wh, invoices, mismatches, seed_)
        finally:
            await pool.close()

    result = asyncio.run(go())
    console.print(
        f"seeded {result.invoices} invoices for {day} at {wh}: {len(result.adjustments)} "
        f"adjustments due, {len(result.unreadable)} unreadable, {len(result.no_po_invoices)} "
        f"citing no PO, {len(result.unknown_sku_lines)} unknown SKU lines"
    )


@app.command("import")
@user_errors
def import_(
    folder: Annotated[Path, typer.Argument(help="Folder of invoice documents, one per file.")],
    date_: Annotated[str, typer.Option("--date", help="Business date, YYYY-MM-DD.")],
    warehouse: Annotated[str, typer.Option(help="Warehouse code.")],
    supplier: Annotated[str | None, typer.Option(help="Sender for files that do not name one.")] = None,
) -> None:
    """Load invoice documents from files (file name = invoice number)."""
    from recon.importer import import_directory

    day, wh = _date(date_), _warehouse(warehouse)

    async def go():
        pool = await _pool()
        try:
            return await import_directory(pool, folder, day, wh, supplier)
        finally:
            await pool.close()

    result = asyncio.run(go())
    console.print(f"imported {result.imported} invoices for {day} at {wh}"
                  + (f"; {result.skipped_existing} already there" if result.skipped_existing else ""))
    if result.skipped_files:
        console.print(_one_line(f"skipped {len(result.skipped_files)} not invoice files: "
                                + ", ".join(result.skipped_files)), markup=False, highlight=False)


# ---------------------------------------------------------------------------------- runs
@app.command()
@user_errors
def run(
    date_: Annotated[str, typer.Option("--date", help="Business date, YYYY-MM-DD.")],
    warehouse: Annotated[str | None, typer.Option(help="Warehouse code.")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the run and print its summary.")] = False,
) -> None:
    """Start (or attach to) the night's run."""
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from recon.keys import workflow_id_for
    from recon.store.invoices import invoices_waiting
    from starter import start_night

    settings = load_settings()
    day, wh = _date(date_), _warehouse(warehouse or settings.warehouse)

    async def go():
        pool = await _pool()
        try:
            have = await invoices_waiting(pool, date.fromisoformat(day), wh)
        finally:
            await pool.close()
        if not have:
            raise Refused(f"no invoices for {day} at {wh}: `recon seed` or `recon import` first")
        client = await _client()
        try:
            handle = await start_night(client, settings, day, wh, invoices=have)
        except WorkflowAlreadyStartedError:
            raise Refused(
                f"the run for {day} at {wh} already finished: see `recon inspect "
                f"{workflow_id_for(day, wh)}`; to post it again, undo it (`recon undo`) then "
                f"`recon redo`"
            ) from None
        console.print(f"run {handle.id} started (Web UI: workflow {handle.id})")
        from recon.temporal_client import has_workers

        if not await has_workers(client, settings.temporal_namespace, settings.task_queue):
            err.print(_one_line(
                f"warning: no worker is polling task queue {settings.task_queue!r} yet; "
                "the run waits until one starts (`recon worker` or `recon dev`)"),
                markup=False, highlight=False)
        if wait:
            return await _wait_for(handle)
        return None

    summary = asyncio.run(go())
    if summary is not None:
        _print_summary(summary)


async def _wait_for(handle):
    """The run's summary; or, when the run stops for a person, one line and its own exit code."""
    from temporalio.client import WorkflowFailureError

    from recon.models import RunSummary
    from recon.waiting import AWAITING_DECISION_EXIT, AwaitingDecision, result_or_handover

    try:
        outcome = await result_or_handover(handle, RunSummary)
    except WorkflowFailureError as exc:
        raise Refused(f"run {handle.id} failed: {exc.cause}") from None
    if isinstance(outcome, AwaitingDecision):
        _fail(outcome.line(), AWAITING_DECISION_EXIT)
    return outcome


def _print_summary(summary) -> None:
    from recon.money import rupees

    table = Table(title=f"Run {summary.workflow_id}: {summary.status}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for label, value in [
        ("invoices", summary.invoices), ("parked items", summary.parked),
        ("mismatches", summary.mismatches), ("ledger entries", summary.ledger_posted),
        ("adjustment total", rupees(summary.adjustment_total_paise)),
        ("stock movements", summary.stock_movements), ("debit notes", summary.debit_notes),
    ]:
        table.add_row(label, str(value))
    console.print(table)


@app.command()
@user_errors
def status(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """Where a run (or an undo/redo of it) stands: Temporal's and the business status, the
    current step, and what the ledger holds for it. Needs no worker."""
    from recon.status import run_status

    wid = _run_id(run_id)

    async def go():
        pool = await _pool()
        try:
            return await run_status(await _client(), pool, wid)
        finally:
            await pool.close()

    for line in asyncio.run(go()).lines():
        console.print(line, markup=False, highlight=False)
    _print_delivery(wid)
    console.print(_model_bill_line(wid), markup=False, highlight=False)


def _print_delivery(wid: str) -> None:
    """Debit notes delivered / pending / failed, from the outbox (skipped without Postgres)."""
    from recon.mail.report import delivery

    async def go():
        pool = await _pool()
        try:
            return await delivery(pool, wid)
        finally:
            await pool.close()

    try:
        console.print(asyncio.run(go()).line(), markup=False, highlight=False)
    except DatabaseUnavailable:
        pass


def _model_bill_line(wid: str) -> str:
    from recon.store.model_bill import bill_line

    return asyncio.run(bill_line(wid))


@app.command()
@user_errors
def inspect(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    references: Annotated[bool, typer.Option(
        "--references", help="List every ledger entry of the run, live or reversed.")] = False,
) -> None:
    """Everything a run wrote and how often its steps were retried."""
    from recon.inspection import inspect_run, ledger_references

    wid = _run_id(run_id)
    if references:
        async def refs():
            pool = await _pool()
            try:
                return await ledger_references(pool, wid)
            finally:
                await pool.close()

        for line in asyncio.run(refs()):
            console.print(line, markup=False, highlight=False)
        return

    async def go():
        pool = await _pool()
        try:
            return await inspect_run(await _client(), pool, wid)
        finally:
            await pool.close()

    facts = asyncio.run(go())
    if as_json:
        sys.stdout.write(json.dumps(facts, default=str) + "\n")
        return
    table = Table(title=f"{wid}")
    table.add_column("fact")
    table.add_column("value", justify="right")
    for key, value in facts.items():
        if key != "steps":
            table.add_row(key, str(value))
    console.print(table)


@app.command()
@user_errors
def demo(
    exit_: Annotated[
        bool, typer.Option("--exit", help="Stop at once instead of keeping the Web UI up.")
    ] = False,
) -> None:
    """The crash story on the embedded stack: a worker dies at entry 24 of step 7, the run finishes."""
    from recon.demo import run_demo

    run_demo(exit_, console)


# ---------------------------------------------------------------------------------- people decide
@app.command()
@user_errors
def handovers() -> None:
    """Runs waiting for a person's decision."""

    from recon.mail.handovers import open_handovers
    from recon.store.handovers import waiting

    async def go():
        pool = await _pool()
        try:
            return await waiting(pool), await open_handovers(pool)
        finally:
            await pool.close()

    rows, mail_rows = asyncio.run(go())
    if not rows and not mail_rows:
        console.print("no run is waiting for a decision")
        return
    table = Table(title="Runs awaiting a decision")
    for column in ("run", "handover", "step", "error", "since"):
        table.add_column(column)
    for r in rows:
        table.add_row(r["workflow_id"], str(r["handover_no"]), r["step"], r["error_type"],
                      r["created_at"].strftime("%Y-%m-%d %H:%M"))
    for r in mail_rows:  # a refused supplier note: answered with `recon mail resend|dismiss`
        table.add_row(r["workflow_id"], f"mail {r['id']}", f"deliver {r['outbox_key']}",
                      r["reply"][:60], r["created_at"].strftime("%Y-%m-%d %H:%M"))
    console.print(table)


@app.command()
@user_errors
def handover(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """A run's handovers: the pending note in full, every decision on record, ignored decisions."""
    from recon.deciding import handover_record

    wid = _run_id(run_id)

    async def go():
        pool = await _pool()
        try:
            return await handover_record(await _client(), pool, wid)
        finally:
            await pool.close()

    for line in asyncio.run(go()):
        console.print(line, markup=False, highlight=False)


@app.command()
@user_errors
def approve(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    decision: Annotated[str, typer.Option(help="resume | retry | undo")],
    by: Annotated[str, typer.Option(help="Who decides.")],
    handover_no: Annotated[int | None, typer.Option(
        "--handover", help="The handover you answer (its number in `recon handovers`).")] = None,
    note: Annotated[str, typer.Option(help="Why, for the record.")] = "",
    park: Annotated[list[str] | None, typer.Option(
        "--park", help="Go on without this invoice (repeatable; needs --note).")] = None,
) -> None:
    """Answer a handover: resume or retry (the failed step runs again from its last committed
    entry; at the gate, resume sends the notes), or undo the run."""
    from recon.deciding import send_decision

    wid = _run_id(run_id)
    if handover_no is None:
        raise Refused(f"say which handover you answer: --handover N "
                      f"(see `recon handover {wid}`)")
    if not 1 <= handover_no <= 1_000_000:
        raise Refused(f"--handover must be a handover number from `recon handover {wid}`")

    async def go() -> str:
        pool = await _pool()
        try:
            return await send_decision(await _client(), pool, wid, handover_no, decision, by,
                                       note, park or [])
        finally:
            await pool.close()

    console.print(asyncio.run(go()), markup=False, highlight=False)


@app.command()
@user_errors
def redo(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    reason: Annotated[str, typer.Option(help="Why, for the record.")],
    by: Annotated[str, typer.Option(help="Who decides.")],
    supplier: Annotated[str | None, typer.Option(help="Redo only this supplier's part.")] = None,
) -> None:
    """Post an undone night (or one supplier of it) again, exactly once, under fresh keys."""
    from recon.money import rupees
    from recon.redoing import start_redo

    wid = _run_id(run_id)
    if not reason.strip() or not by.strip():
        raise Refused("--reason and --by must say why and who")

    async def go():
        pool = await _pool()
        try:
            client = await _client()
            handle, ledger, stock, generation = await start_redo(
                client, pool, load_settings(), wid, supplier, reason, by)
            console.print(f"redo {handle.id} started: {ledger} ledger entries and {stock} stock "
                          f"movements to post again (generation {generation})",
                          markup=False, highlight=False)
            return await _wait_for(handle)
        finally:
            await pool.close()

    summary = asyncio.run(go())
    console.print(f"redo finished: {summary.ledger_posted} live ledger entries in {wid}, "
                  f"{rupees(summary.adjustment_total_paise)}", markup=False, highlight=False)


@app.command()
@user_errors
def mail(
    target: Annotated[str | None, typer.Argument(
        metavar="[RUN | show KEY | resend KEY | dismiss KEY]",
        help="A run to list its messages (all runs if omitted), or an action on one message.")] = None,
    key: Annotated[str | None, typer.Argument(metavar="", show_default=False)] = None,
    by: Annotated[str, typer.Option(help="Who decides (resend, dismiss).")] = "",
    to: Annotated[str | None, typer.Option(help="resend: a corrected address.")] = None,
    note: Annotated[str, typer.Option(help="Why, for the record.")] = "",
) -> None:
    """The outbox as mail: each message's state, one message in full, or answer a refused one."""
    from recon.mail.commands import mail_command

    async def go():
        pool = await _pool()
        try:
            await mail_command(pool, console, target, key, by=by, to=to, note=note)
        finally:
            await pool.close()

    asyncio.run(go())


@app.command()
@user_errors
def undo(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    reason: Annotated[str, typer.Option(help="Why, for the record.")],
    by: Annotated[str, typer.Option(help="Who decides.")],
    supplier: Annotated[str | None, typer.Option(help="Undo only this supplier's part.")] = None,
    reference: Annotated[list[str] | None, typer.Option(
        "--reference", help="Undo only these ledger references (repeatable).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be reversed.")] = False,
) -> None:
    """Compensate a finished run (or one supplier of it): reversals, opposite stock, withdrawals."""
    from recon.undoing import describe_plan, start_undo

    wid = _run_id(run_id)
    if not reason.strip() or not by.strip():
        raise Refused("--reason and --by must say why and who")
    if supplier and reference:
        raise Refused("give --supplier or --reference, not both")

    async def go():
        pool = await _pool()
        try:
            client = await _client()
            if dry_run:
                return await describe_plan(client, pool, wid, supplier, reference or [])
            return await start_undo(client, pool, load_settings(), wid, supplier, reference or [],
                                    reason, by)
        finally:
            await pool.close()

    for line in asyncio.run(go()):
        console.print(line, markup=False, highlight=False)


# ---------------------------------------------------------------------------------- chaos
@app.command()
@user_errors
def chaos(
    invoices: Annotated[int, typer.Option(help="Invoices in the night.")] = 2000,
    mismatches: Annotated[int | None, typer.Option(help="Adjustments (default: a tenth).")] = None,
    kills: Annotated[int, typer.Option(help="SIGKILLs of worker processes.")] = 20,
    freezes: Annotated[int, typer.Option(help="Workers frozen past the heartbeat timeout.")] = 3,
    restarts: Annotated[int, typer.Option(help="Restarts of Temporal, and as many of Postgres.")] = 2,
    seed_: Annotated[int, typer.Option("--seed", help="Seed for the night and the faults.")] = 1,
    date_: Annotated[str, typer.Option("--date", help="Business date, YYYY-MM-DD.")] = "2026-11-02",
    timeout: Annotated[float, typer.Option(help="Give up (FAIL) after this many seconds.")] = 900,
) -> None:
    """Run a seeded night clean and under random crashes on a scratch stack; compare row by row."""
    from recon.chaos import ChaosPlan, run_chaos
    from recon.errors import ChaosFailed

    if invoices < 1 or min(kills, freezes, restarts) < 0 or timeout <= 0:
        raise Refused("--invoices must be at least 1; --kills, --freezes, --restarts at least 0; "
                      "--timeout above 0")
    plan = ChaosPlan(invoices=invoices, mismatches=invoices // 10 if mismatches is None else mismatches,
                     kills=kills, freezes=freezes, restarts=restarts, seed=seed_,
                     business_date=_date(date_), timeout=timeout)
    from recon.seed import plan_night

    plan_night(plan.business_date, "chaos", plan.invoices, plan.mismatches, plan.seed)  # bad input
    # soft_wrap: each fault and the verdict stay one line however long, also when piped.
    say = functools.partial(console.print, markup=False, highlight=False, soft_wrap=True)
    try:
        run_chaos(plan, say)
    except ChaosFailed as exc:
        verdict, code = f"FAIL: {exc}", 1
    else:
        verdict, code = "PASS", 0
    say(verdict)
    # Everything is stopped and deleted by now. Leave without interpreter finalisation: after a
    # Temporal client it can abort (PyGILState_Release, an open SDK issue) and turn PASS into 134.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


from recon.schedule_cli import build_schedule_app  # noqa: E402 - needs the helpers above

app.add_typer(build_schedule_app(user_errors, console, _warehouse, _date), name="schedule")


def main() -> None:
    """Entry point: usage errors become one line too. The process leaves with `os._exit` once the
    command is done: a command that used a Temporal client can otherwise abort during interpreter
    finalisation (`Fatal Python error: PyGILState_Release`, exit 134/139, from the SDK's runtime
    threads), turning a success into a false failure for cron and scripts. Every command cleans up
    its own children (worker, servers, pools) before it returns, so nothing is left to finalise."""
    code = _run_command()
    import logging

    logging.shutdown()  # what atexit would have done for log handlers
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe (`recon ... | head`) must not change the exit code
    os._exit(code)


def _run_command() -> int:
    from recon.logs import configure

    configure()
    try:
        result = app(standalone_mode=False)
    except (typer.Abort, KeyboardInterrupt):
        return _exit_line("interrupted", 130)
    except typer.TyperException as exc:
        return _exit_line(exc.format_message() or type(exc).__name__,
                          getattr(exc, "exit_code", 1) or 1)
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # a bug, not a user mistake: keep the traceback for the report
        import traceback

        traceback.print_exc()
        return 1
    return result if isinstance(result, int) else 0


def _exit_line(message: str, code: int) -> int:
    err.print(f"error: {_one_line(message)}", markup=False, highlight=False)
    return code


if __name__ == "__main__":
    main()
