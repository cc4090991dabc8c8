"""`recon ledger init`: a Tryton to post into, made in one command (docs/ledger.md).

A dev or test Tryton on SQLite: the database (company, chart of accounts, fiscal years with
monthly periods, the accounts and journal step 7 posts on), its server configuration, and the
settings a worker needs, printed; `--start` also starts the server and writes those settings to
`.recon/env`. A production Tryton is not made here: it is named by RECON_LEDGER_URL and a user
whose password lives in RECON_LEDGER_SECRET_FILE.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import subprocess
import time
from datetime import date
from pathlib import Path
from typing import Annotated

import typer

from recon.cli.common import console, user_errors
from recon.domain.errors import Refused

app = typer.Typer(help="An outside ledger to post into (Tryton).", no_args_is_help=True,
                  add_completion=False)


@app.command("init")
@user_errors
def init(
    directory: Annotated[Path | None, typer.Option(
        "--dir", help="Where the SQLite database and trytond.conf go (default: .recon/tryton).")] = None,
    year: Annotated[list[int] | None, typer.Option(
        "--year", help="A calendar fiscal year to open (repeatable; default: this year and next).")
    ] = None,
    port: Annotated[int, typer.Option("--port", help="The port trytond listens on.")] = 8000,
    start: Annotated[bool, typer.Option(
        "--start", help="Start trytond now and write the RECON_LEDGER settings to .recon/env.")] = False,
) -> None:
    """Create a Tryton database to post into, print what it made and how to use it."""
    from recon.runtime.config import ENV_FILE_NAME, read_env_file, state_dir, write_env_file

    if importlib.util.find_spec("trytond") is None or importlib.util.find_spec("proteus") is None:
        raise Refused("trytond is not installed here: `uv sync` (the dev group has it) or "
                      "`pip install trytond trytond-account proteus`")
    from recon.ledger.tryton_setup import DATABASE, create_database, server_command, write_config

    directory = (directory or state_dir() / "tryton").resolve()
    if (directory / f"{DATABASE}.sqlite").exists():
        raise Refused(f"{directory} already holds a Tryton database ({DATABASE}.sqlite); "
                      "use it, or name another --dir")
    years = sorted(set(year or [date.today().year, date.today().year + 1]))
    if not all(1900 < y < 3000 for y in years):
        raise Refused(f"--year must be a calendar year, got {years}")
    password = os.environ.get("RECON_LEDGER_SECRET") or secrets.token_urlsafe(18)
    try:
        made = create_database(directory, password, years)
    except subprocess.CalledProcessError as exc:
        words = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        raise Refused(f"trytond-admin failed: {words[-1] if words else exc}") from None
    write_config(directory, port)
    settings = {"RECON_LEDGER": "tryton", "RECON_LEDGER_URL": f"http://127.0.0.1:{port}/{DATABASE}",
                "RECON_LEDGER_SECRET_FILE": str(directory / "admin-password"),
                # a new Tryton holds none of recon's suppliers: each gets a party on first use
                "RECON_LEDGER_CREATE_PARTIES": "true"}
    for line in made:
        console.print(line, markup=False, highlight=False)
    command = " ".join(server_command(directory))
    if start:
        log = (directory / "trytond.log").open("ab")
        process = subprocess.Popen(server_command(directory), stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        time.sleep(1)
        if process.poll() is not None:
            raise Refused(f"trytond exited at once; see {directory / 'trytond.log'}")
        (directory / "trytond.pid").write_text(str(process.pid))
        env_file = state_dir() / ENV_FILE_NAME
        write_env_file(env_file, {**read_env_file(env_file), **settings})
        console.print(f"trytond started (pid {process.pid}, log {directory / 'trytond.log'}); "
                      f"settings written to {env_file}", markup=False, highlight=False)
    else:
        console.print(f"start it with: {command}", markup=False, highlight=False)
        console.print("then give the worker: " + " ".join(f"{k}={v}" for k, v in settings.items()),
                      markup=False, highlight=False)


@app.command("check")
@user_errors
def check() -> None:
    """Log in to the configured Tryton, find its accounts, and show each supplier's party there
    (RECON_LEDGER_PARTY_BY); exit 1 when a supplier has none and parties are not created."""
    import asyncio

    from recon.cli.common import database
    from recon.ledger import outside_ledger
    from recon.ledger.parties import map_parties
    from recon.ledger.port import LedgerRefused
    from recon.ledger.tryton import TrytonLedger
    from recon.ledger.wire import LedgerUnavailable
    from recon.runtime.config import load_settings
    from recon.store.ledger_postings import suppliers

    settings = load_settings()
    ledger = outside_ledger(settings)
    if not isinstance(ledger, TrytonLedger):
        raise Refused(f"recon ledger check asks a Tryton (RECON_LEDGER=tryton); RECON_LEDGER is "
                      f"{settings.ledger}")

    async def go():
        async with database() as pool:
            rows = await suppliers(pool)
        await ledger.prepare()
        return await map_parties(ledger, rows)

    try:
        mapped = asyncio.run(go())
    except (LedgerRefused, LedgerUnavailable) as exc:
        raise Refused(str(exc)) from None
    say = lambda line: console.print(line, markup=False, highlight=False)  # noqa: E731
    say(f"Tryton at {settings.ledger_url} as {settings.ledger_user}: payable "
        f"{ledger.codes['payable']}, variance {ledger.codes['variance']}, journal "
        f"{ledger.codes['journal']} found")
    say("module recon_keys: activated, Tryton refuses a second move of a key" if ledger.keyed else
        "module recon_keys: not activated, recon keeps to the lowest-id rule (on PostgreSQL, "
        "install it: docs/ledger.md)")
    found = [m for m in mapped if m.party is not None]
    missing = [m for m in mapped if m.party is None]
    say(f"{len(found)} of {len(mapped)} suppliers -> Tryton parties by {ledger.party_by} "
        "(RECON_LEDGER_PARTY_BY):")
    for m in found:
        say(m.line())
    if not missing:
        return
    say(f"{len(missing)} suppliers with no party:")
    for m in missing:
        say(m.line())
    if ledger.create_parties:
        say("RECON_LEDGER_CREATE_PARTIES=true: each gets a party named by its id on first use")
        return
    say("a night posting for them hands over naming the supplier: add the parties in Tryton "
        "(or set RECON_LEDGER_PARTY_BY), then run this again")
    raise typer.Exit(1)
