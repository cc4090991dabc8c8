"""Commands where people decide on a run that waits: `recon handovers`, `handover`, `approve`.
Undo and redo are in `undo.py`, the outbox and its bounces in `mail.py`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from recon.cli.common import checked_run_id, console, database, temporal, user_errors
from recon.domain.errors import Refused
from recon.domain.printable import printable


@user_errors
def handovers() -> None:
    """Runs waiting for a person's decision."""

    from recon.store.bounces import open_handovers
    from recon.store.handovers import waiting

    async def go():
        async with database() as pool:
            return await waiting(pool), await open_handovers(pool)

    rows, mail_rows = asyncio.run(go())
    if not rows and not mail_rows:
        console.print("no run is waiting for a decision")
        return
    table = Table(title="Runs awaiting a decision")
    for column in ("run", "handover", "step", "error", "since"):
        table.add_column(column)
    def cells(*values: object) -> list[Text]:  # data, never markup or terminal controls
        return [Text(printable(v)) for v in values]

    for r in rows:
        table.add_row(*cells(r["workflow_id"], r["handover_no"], r["step"], r["error_type"],
                             r["created_at"].strftime("%Y-%m-%d %H:%M")))
    for r in mail_rows:  # a refused supplier note: answered with `recon mail resend|dismiss`
        table.add_row(*cells(r["workflow_id"], f"mail {r['id']}", f"deliver {r['outbox_key']}",
                             r["reply"][:60], r["created_at"].strftime("%Y-%m-%d %H:%M")))
    console.print(table)


@user_errors
def handover(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """A run's handovers: the pending note in full, every decision on record, ignored decisions."""
    from recon.ops.decisions import handover_record

    wid = checked_run_id(run_id)

    async def go():
        async with database() as pool:
            return await handover_record(await temporal(), pool, wid)

    for line in asyncio.run(go()):  # a note's line breaks are kept, other controls escaped
        console.print(printable(line, keep_newlines=True), markup=False, highlight=False)


@user_errors
def approve(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    decision: Annotated[str, typer.Option(help="resume | retry | undo")],
    handover_no: Annotated[int | None, typer.Option(
        "--handover", help="The handover you answer (its number in `recon handovers`).")] = None,
    by: Annotated[str | None, typer.Option(
        help="Who decides: must be the owner of the key (default: the key's owner).")] = None,
    note: Annotated[str, typer.Option(help="Why, for the record.")] = "",
    park: Annotated[list[str] | None, typer.Option(
        "--park", help="Go on without this invoice: its number (INV-7001) or, when two "
                       "suppliers sent it, its reference (S001:INV-7001); repeatable; needs "
                       "--note.")] = None,
    key: Annotated[Path | None, typer.Option(
        help="Your approver key (default: RECON_APPROVER_KEY).")] = None,
    print_only: Annotated[bool, typer.Option(
        "--print", help="Print the signed decision as JSON instead of sending it (for the "
                        "Web UI's Send an Update, or `temporal workflow update execute`).")] = False,
) -> None:
    """Answer a handover with a signed decision: resume or retry (the failed step runs again
    from its last committed entry; at the gate, resume sends the notes), or undo the run."""
    from recon.cli.approvers import approver_key
    from recon.domain.models import DECISIONS
    from recon.ops.approvers import signed_decision
    from recon.ops.decisions import park_refs, send_decision

    wid = checked_run_id(run_id)
    if handover_no is None:
        raise Refused(f"say which handover you answer: --handover N "
                      f"(see `recon handover {wid}`)")
    if not 1 <= handover_no <= 1_000_000:
        raise Refused(f"--handover must be a handover number from `recon handover {wid}`")
    if decision not in DECISIONS:
        raise Refused(f"unknown decision {decision!r}: use one of {', '.join(DECISIONS)}")
    if by is not None and not by.strip():
        raise Refused("say who decides (--by NAME), or leave --by out: the key says who")
    signing_key = approver_key(key)
    if signing_key is None:
        raise Refused("decisions are signed: set RECON_APPROVER_KEY to your approver key or "
                      "pass --key PATH (recon approvers add ... --key-file PATH makes one)")

    async def go() -> str:
        async with database() as pool:
            parked = await park_refs(pool, wid, park) if park else []
            signed = await signed_decision(pool, signing_key, run=wid, handover_no=handover_no,
                                           decision=decision, by=by, note=note, park=parked)
            if print_only:
                return signed.model_dump_json()
            return await send_decision(await temporal(), wid, signed)

    console.print(printable(asyncio.run(go())), markup=False, highlight=False, soft_wrap=True)
