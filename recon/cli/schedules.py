"""`recon schedule ...`: the nightly schedule per warehouse, as a typer sub-app.

Its commands use the CLI's own error handling, console and client (`recon/cli/common.py`), so
every one gives one line and a non-zero exit on bad input exactly like the rest of `recon`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import Annotated, Any

import typer
from rich.table import Table

from recon.cli.common import business_date, console, temporal, user_errors, warehouse_code
from recon.domain.printable import printable
from recon.runtime.config import load_settings

WarehouseOpt = Annotated[str, typer.Option("--warehouse", help="Warehouse code, e.g. ldh.")]


def parse_window(value: str) -> timedelta:
    """`90m`, `6h`, `2d` -> a timedelta (the catch-up window)."""
    match = re.fullmatch(r"(\d+)([mhd])", value.strip())
    if not match or int(match[1]) == 0:
        raise ValueError(f"--catchup must look like 90m, 6h or 2d, got {value!r}")
    unit = {"m": "minutes", "h": "hours", "d": "days"}[match[2]]
    return timedelta(**{unit: int(match[1])})


def _ops():
    """`recon.ops.schedules`, imported when a schedule command runs: it brings the Temporal client
    and the workflows (~0.7 s) that `recon --help` and every other command must not pay for."""
    from recon.ops import schedules

    return schedules


app = typer.Typer(help="The nightly schedule of a warehouse (a Temporal Schedule).",
                  no_args_is_help=True)

def run(coro_fn: Callable[..., Any], *args: Any) -> Any:
    """One schedule call with the command's client (TemporalUnavailable, one line, if it is down)."""
    async def go():
        return await coro_fn(await temporal(), *args)
    return asyncio.run(go())

@app.command()
@user_errors
def create(
    warehouse: WarehouseOpt,
    at: Annotated[str, typer.Option(help="Local time of day, HH:MM.")] = "02:00",
    tz: Annotated[str, typer.Option("--tz", help="IANA time zone.")] = "Asia/Kolkata",
    lag_days: Annotated[int, typer.Option(
        help="Business date = local date of the firing minus this many days.")] = 1,
    catchup: Annotated[str, typer.Option(
        help="Make up a firing missed while Temporal was down if younger than this.")] = "6h",
    paused: Annotated[bool, typer.Option("--paused", help="Create it paused.")] = False,
) -> None:
    """Start each night's run at AT local time, as recon-{date}-{warehouse}."""
    from recon.domain.schedules import clock, zone

    wh, window, _, _ = warehouse_code(warehouse), parse_window(catchup), clock(at), zone(tz)
    settings = load_settings()
    sid = run(lambda c: _ops().create(c, settings, wh, at, tz, lag_days=lag_days,
                                         catchup=window, paused=paused))
    console.print(f"schedule {sid} created: every day at {at} {tz}, night = that day "
                  f"minus {lag_days}; catch-up window {catchup}" + (" (paused)" if paused else ""))

@app.command("list")
@user_errors
def list_() -> None:
    """Every recon nightly schedule."""
    views = run(_ops().list_all)
    if not views:
        console.print("no recon schedule: `recon schedule create --warehouse W` makes one")
        return
    table = Table(title="Nightly schedules")
    for column in ("warehouse", "at", "time zone", "state", "next firing (UTC)"):
        table.add_column(column)
    for v in views:
        table.add_row(v.warehouse, v.at, v.time_zone, "paused" if v.paused else "active",
                      f"{v.next_runs[0]:%Y-%m-%d %H:%M}" if v.next_runs else "-")
    console.print(table)

@app.command()
@user_errors
def describe(warehouse: WarehouseOpt) -> None:
    """When it fires next, what it started recently, whether it is paused and why."""
    v = run(_ops().describe, warehouse_code(warehouse))
    console.print(f"{v.schedule_id}: {'paused' if v.paused else 'active'}; every day at "
                  f"{v.at} {v.time_zone}; night = firing date minus {v.lag_days}")
    console.print(printable(f"note: {v.note or '-'}"), markup=False)
    console.print(f"catch-up window: {v.catchup_window}; firings skipped because a night "
                  f"was still running: {v.skipped_overlap}")
    for when in v.next_runs:
        console.print(f"next: {when:%Y-%m-%d %H:%M} UTC")
    for wid in v.recent:
        console.print(f"recent starter: {wid}")

@app.command()
@user_errors
def pause(warehouse: WarehouseOpt,
          note: Annotated[str, typer.Option(help="Why, for the record.")] = "paused by recon") -> None:
    """Stop firing until unpaused (runs already started go on)."""
    run(_ops().pause, warehouse_code(warehouse), note)
    console.print(f"{_ops().schedule_id(warehouse)} paused")

@app.command()
@user_errors
def unpause(warehouse: WarehouseOpt,
            note: Annotated[str, typer.Option(help="Why, for the record.")] = "unpaused by recon"
            ) -> None:
    """Fire again from the next scheduled time."""
    run(_ops().unpause, warehouse_code(warehouse), note)
    console.print(f"{_ops().schedule_id(warehouse)} unpaused")

@app.command()
@user_errors
def trigger(warehouse: WarehouseOpt) -> None:
    """Fire now (skipped by Temporal if this warehouse's night is still running)."""
    run(_ops().trigger, warehouse_code(warehouse))
    console.print(f"{_ops().schedule_id(warehouse)} triggered")

@app.command()
@user_errors
def backfill(
    warehouse: WarehouseOpt,
    from_: Annotated[str, typer.Option("--from", help="First business date, YYYY-MM-DD.")],
    to: Annotated[str, typer.Option("--to", help="Last business date, YYYY-MM-DD.")],
) -> None:
    """Start each missing night in the range once, one after another; existing nights are skipped."""
    first, last = date.fromisoformat(business_date(from_)), date.fromisoformat(business_date(to))
    ids = run(_ops().backfill, warehouse_code(warehouse), first, last)
    console.print(f"backfill queued for {len(ids)} nights ({ids[0]} .. {ids[-1]}); "
                  "nights that exist are skipped")

@app.command()
@user_errors
def delete(warehouse: WarehouseOpt) -> None:
    """Delete the schedule; the runs it started stay as they are."""
    run(_ops().delete, warehouse_code(warehouse))
    console.print(f"{_ops().schedule_id(warehouse)} deleted")
