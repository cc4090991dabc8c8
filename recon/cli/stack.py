"""Commands that run servers and workers, the demo and the chaos check: `recon dev`, `worker`,
`sender`, `demo`, `chaos`."""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from typing import Annotated

import typer

from recon.cli.common import (
    MAX_PORT,
    business_date,
    console,
    user_errors,
)
from recon.domain.errors import Refused
from recon.domain.redaction import mask_text
from recon.runtime.config import load_settings, state_dir

MAX_CHAOS_NIGHTS = 31  # a month: each night runs twice, with workers started afresh
MAX_CHAOS_WAREHOUSES = 20  # a distributor's warehouses whose nights start together


@user_errors
def dev(
    no_worker: Annotated[bool, typer.Option("--no-worker", help="Start the servers only.")] = False,
    port: Annotated[int, typer.Option(help="Temporal gRPC port.", min=1, max=MAX_PORT)] = 7233,
    ui_port: Annotated[int, typer.Option(help="Temporal Web UI port.", min=1, max=MAX_PORT)] = 8233,
    schedule: Annotated[bool, typer.Option(
        "--schedule", help="Also create a demo nightly schedule for RECON_WAREHOUSE.")] = False,
    encrypt: Annotated[bool, typer.Option(
        "--encrypt", help="Encrypt payloads: make a key in RECON_HOME/payload-keys (once) and "
                          "run the Web UI's codec server.")] = False,
    imap: Annotated[bool, typer.Option(
        "--imap/--no-imap", help="Also serve a loopback IMAP mailbox holding the example invoices "
                                 "as mails (Dovecot, when installed).")] = True,
    desk: Annotated[bool, typer.Option(
        "--desk/--no-desk", help="Also serve the finance desk (RECON_DESK_PORT, another free "
                                 "port when taken).")] = True,
) -> None:
    """Run the embedded stack (Temporal + Web UI, Postgres, a worker) until Ctrl-C or SIGTERM."""
    from recon.runtime.devstack import run_dev

    if port == ui_port:
        raise Refused(f"--port and --ui-port must differ, both are {port}")

    def announce(stack) -> None:
        console.print(f"Temporal  {stack.temporal.address}   Web UI {stack.ui_url}")
        console.print(f"Postgres  {mask_text(stack.postgres.url)}")
        if stack.mail is not None:
            console.print(f"Mail      {stack.mail.url}   every message kept in "
                          f"{stack.mail.handler.maildir}/new (Maildir)")
        if stack.imap is not None:
            box = stack.imap
            held = (f"{box.delivered} example invoices delivered" if box.delivered
                    else "its mail kept from the last start")
            console.print(f"IMAP      {box.url}   password in {box.password_file}; {held}",
                          markup=False, highlight=False)
        if stack.desk is not None:
            console.print(f"Desk      {stack.desk_url}   the finance desk: nights, handovers, "
                          "passkey-signed decisions (recon approvers add NAME ... --passkey)",
                          markup=False, highlight=False)
        if stack.codec is not None:
            keys = stack.codec.service.keyring.ids
            console.print(f"Codec     {stack.codec.url()}   payloads encrypted with key {keys[0]};"
                          " the Web UI decodes through it (token: RECON_CODEC_TOKEN in the env file)",
                          markup=False, highlight=False)
        console.print(f"settings written to {state_dir() / 'env'}; "
                      + ("worker running." if not no_worker else "no worker.")
                      + " Ctrl-C stops everything.")
        if schedule:
            from recon.ops.schedules import ensure_demo_schedule

            console.print(asyncio.run(ensure_demo_schedule(stack.settings())))

    from recon.desk.server import serve as serve_desk
    from worker import run_worker

    run_dev(state_dir(), port, ui_port, None if no_worker else run_worker, announce,
            say=functools.partial(console.print, markup=False, highlight=False), encrypt=encrypt,
            imap=imap, desk=serve_desk if desk else None)
    console.print("stopped")


@user_errors
def worker(
    no_sender: Annotated[bool, typer.Option(
        "--no-sender", help="Do not deliver the outbox from this process.")] = False,
) -> None:
    """Run a worker against TEMPORAL_ADDRESS / DATABASE_URL (or .recon/env); with SMTP_URL set it
    also delivers the outbox unless --no-sender."""
    from worker import run_worker

    asyncio.run(run_worker(load_settings(), with_sender=not no_sender))


@user_errors
def sender(
    lanes: Annotated[int | None, typer.Option(help="Messages in flight at once.")] = None,
) -> None:
    """Deliver the outbox over SMTP (SMTP_URL) until Ctrl-C or SIGTERM."""
    from recon.mail.run import run_sender

    asyncio.run(run_sender(load_settings(), lanes))


@user_errors
def demo(
    exit_: Annotated[
        bool, typer.Option("--exit", help="Stop at once instead of keeping the Web UI up.")
    ] = False,
    ledger: Annotated[str | None, typer.Option(
        "--ledger", help="builtin (the default), or tryton: also post into a real Tryton made "
        "for the demo.")] = None,
) -> None:
    """The crash story on the embedded stack: a worker dies at entry 24 of step 7, the run finishes."""
    from recon.tools.demo import run_demo

    if ledger not in (None, "builtin", "tryton"):
        raise Refused(f"--ledger must be builtin or tryton, got {ledger!r}")
    ledger = None if ledger == "builtin" else ledger
    run_demo(exit_, console, ledger)


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
    format_: Annotated[str, typer.Option(
        "--format", help="The night's documents: text, ubl, gst, cii, facturx, pdf or mixed.")] = "text",
    nights: Annotated[int, typer.Option(
        help="Consecutive seeded nights (a month whose orders span them), faults spread over "
             f"them; 1 to {MAX_CHAOS_NIGHTS}.")] = 1,
    ledger: Annotated[str | None, typer.Option(
        "--ledger", help="builtin (the default), or tryton: each night also posts into a real "
        "Tryton of its own, and the two books must agree.")] = None,
    sources: Annotated[bool, typer.Option(
        "--sources", help="The night's invoices come through sources (a Dovecot mailbox, a drop "
        "folder) and its orders and receipts through ERP exports, fetched under the faults.")] = False,
    mail_outage: Annotated[bool, typer.Option(
        "--mail-outage", help="With --sources: the mail server is down for 60 s during the fetch.")] = False,
    warehouses: Annotated[int, typer.Option(
        help="Warehouses' nights started together (a head office with --invoices, branches with "
             f"a tenth), faults landing on them all; 1 to {MAX_CHAOS_WAREHOUSES}.")] = 1,
    model: Annotated[str, typer.Option(
        "--model", help="offline (the default), or batch: both nights extract through a loopback "
        "Batch API, which must make one batch per group and bill nothing twice.")] = "offline",
) -> None:
    """Run a seeded night (or --nights of them) clean and under random crashes on a scratch
    stack; compare row by row."""
    from recon.domain.errors import ChaosFailed
    from recon.tools.chaos.plan import ChaosPlan
    from recon.tools.chaos.run import run_chaos

    if invoices < 1 or min(kills, freezes, restarts) < 0 or timeout <= 0:
        raise Refused("--invoices must be at least 1; --kills, --freezes, --restarts at least 0; "
                      "--timeout above 0")
    if not 1 <= nights <= MAX_CHAOS_NIGHTS:
        raise Refused(f"--nights must be 1 to {MAX_CHAOS_NIGHTS}, got {nights}")
    if ledger not in (None, "builtin", "tryton"):
        raise Refused(f"--ledger must be builtin or tryton, got {ledger!r}")
    ledger = None if ledger == "builtin" else ledger
    if not 1 <= warehouses <= MAX_CHAOS_WAREHOUSES:
        raise Refused(f"--warehouses must be 1 to {MAX_CHAOS_WAREHOUSES}, got {warehouses}")
    if warehouses > 1 and (nights > 1 or ledger or sources or model != "offline"):
        raise Refused("--warehouses takes one night each (no --nights, --ledger, --sources or --model)")
    if ledger == "tryton" and nights > 1:
        raise Refused("--ledger tryton takes one night (--nights 1)")
    plan = ChaosPlan(invoices=invoices, mismatches=invoices // 10 if mismatches is None else mismatches,
                     kills=kills, freezes=freezes, restarts=restarts, seed=seed_,
                     business_date=business_date(date_), timeout=timeout, documents=format_,
                     nights=nights, ledger=ledger, sources=sources, mail_outage=mail_outage,
                     warehouses=warehouses, model=model)
    if model != "offline":
        from recon.tools.chaos.batch_model import refuse_unless_available

        refuse_unless_available(model, nights)
    if mail_outage and not sources:
        raise Refused("--mail-outage takes --sources (the outage is of the night's mail server)")
    if sources:
        from recon.tools.chaos.sources import refuse_without_dovecot

        refuse_without_dovecot(plan)
    from recon.tools.seed import plan_night
    from recon.tools.seed_formats import SEED_FORMATS

    if format_ not in SEED_FORMATS:
        raise Refused(f"--format must be one of {', '.join(SEED_FORMATS)}, got {format_!r}")

    plan_night(plan.business_date, "chaos", plan.invoices, plan.mismatches, plan.seed)  # bad input
    if nights > 1:
        from recon.tools.seed_months import check_month

        check_month(plan.business_date, nights, invoices, 0)
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
