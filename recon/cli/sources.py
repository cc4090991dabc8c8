"""`recon source add|list|remove|test`: where a warehouse's night fetches its invoices and master
data from, configured once and kept in Postgres (docs/sources.md). A secret is given by file or
environment and never stored: only where the worker reads it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from recon.cli.common import console, database, one_line, user_errors, warehouse_code
from recon.domain.errors import Refused
from recon.domain.printable import printable

app = typer.Typer(
    help="Where each night fetches from: an IMAP folder, a drop folder, an ERP's export folder.",
    no_args_is_help=True,
    add_completion=False,
)

_ID = typer.Argument(help="The source's id (`recon source list`).", metavar="ID", min=1)


@app.command("add")
@user_errors
def add(
    warehouse: Annotated[str, typer.Argument(help="Warehouse code, e.g. ldh.")],
    url: Annotated[str, typer.Argument(
        help="imap://USER@HOST:993/FOLDER, folder:/path or erp:/path.")],
    password_file: Annotated[Path | None, typer.Option(
        "--password-file", help="An IMAP source's password, read from this file by the worker.")] = None,
    password_env: Annotated[str | None, typer.Option(
        "--password-env", help="An IMAP source's password, read from this variable of the "
        "worker's environment.")] = None,
    date_format: Annotated[str | None, typer.Option(
        "--date-format", help="An erp source's dates: YYYY-MM-DD, DD-MM-YYYY, DD/MM/YYYY or "
        "DD.MM.YYYY.")] = None,
    amount_format: Annotated[str | None, typer.Option(
        "--amount-format", help="An erp source's amounts: plain or indian (1,45,000.00).")] = None,
    file_to: Annotated[str | None, typer.Option(
        "--file-to", help="A mailbox source's folder for the messages it files (e.g. "
        "recon-unreadable): moved there once their import has committed.")] = None,
) -> None:
    """Add a source to a warehouse's nights: each night fetches what is new there first."""
    from recon.sources.spec import parse
    from recon.store import sources

    wh = warehouse_code(warehouse)
    spec = parse(url, date_format=date_format, amount_format=amount_format,
                 password_file=password_file, password_env=password_env, file_to=file_to)

    async def go() -> int | None:
        async with database() as pool:
            return await sources.add(pool, wh, spec.kind, spec.url, spec.settings, spec.secret_ref)

    added = asyncio.run(go())
    if added is None:
        raise Refused(f"{wh} has the source {spec.url} already (`recon source list`)")
    console.print(one_line(f"source {added} added: {wh} fetches {spec.url} each night"
                           + (f" ({_settings(spec.settings)})" if spec.settings else "")
                           + f"; see what it holds: recon source test {added}"),
                  markup=False, highlight=False, soft_wrap=True)


def _settings(settings: dict) -> str:
    return ", ".join(f"{k.replace('_', '-')} {v}" for k, v in sorted(settings.items()))


@app.command("list")
@user_errors
def list_(
    warehouse: Annotated[str | None, typer.Option("--warehouse", help="Only this warehouse.")] = None,
) -> None:
    """Every source, by warehouse (secrets are never shown: only where they are read)."""
    from recon.sources.secrets import shown
    from recon.store import sources

    wh = warehouse_code(warehouse) if warehouse is not None else None

    async def go():
        async with database() as pool:
            return await sources.listed(pool, wh)

    rows = asyncio.run(go())
    if not rows:
        console.print("no source: `recon source add WAREHOUSE folder:/path` adds one",
                      markup=False, highlight=False)
        return
    table = Table("id", "warehouse", "kind", "settings", "password", "added", "url")
    for column in table.columns:  # a path, URL or variable is copied whole, never broken
        column.no_wrap = column.header != "settings"
    for r in rows:
        table.add_row(str(r["id"]), r["warehouse"], r["kind"],
                      _settings(json.loads(r["settings"])) or "-", printable(shown(r["secret_ref"])),
                      r["added_at"].strftime("%Y-%m-%d %H:%M"), printable(r["url"]))
    console.print(table)


@app.command("remove")
@user_errors
def remove(source_id: Annotated[int, _ID]) -> None:
    """Stop fetching from a source (what it brought in stays with its nights)."""
    from recon.store import sources

    async def go() -> bool:
        async with database() as pool:
            return await sources.remove(pool, source_id)

    if not asyncio.run(go()):
        raise Refused(f"no source {source_id} (`recon source list`)")
    console.print(f"source {source_id} removed", markup=False, highlight=False)


@app.command("test")
@user_errors
def test(source_id: Annotated[int, _ID]) -> None:
    """Connect and say what the source holds now, without importing or loading anything."""
    from recon.sources.probe import probe
    from recon.store import sources

    async def go() -> list[str]:
        async with database() as pool:
            source = await sources.one(pool, source_id)
            if source is None:
                raise Refused(f"no source {source_id} (`recon source list`)")
            return await probe(pool, source)

    for line in asyncio.run(go()):
        console.print(one_line(line), markup=False, highlight=False, soft_wrap=True)
