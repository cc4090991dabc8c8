"""Commands where people decide: `recon handovers`, `handover`, `approve`, `redo`, `mail`,
`undo`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from recon.cli.common import checked_run_id, console, database, temporal, user_errors
from recon.cli.runs import wait_for
from recon.domain.errors import Refused
from recon.domain.printable import printable
from recon.runtime.config import load_settings


@user_errors
def handovers() -> None:
    """Runs waiting for a person's decision."""

    from recon.store.handovers import waiting
    from recon.store.mail_handovers import open_handovers

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

    for line in asyncio.run(go()):
        console.print(printable(line), markup=False, highlight=False)


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


@user_errors
def redo(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    reason: Annotated[str, typer.Option(help="Why, for the record.")],
    by: Annotated[str | None, typer.Option(
        help="Who decides: must be the owner of the key (default: the key's owner).")] = None,
    supplier: Annotated[str | None, typer.Option(help="Redo only this supplier's part.")] = None,
    key: Annotated[Path | None, typer.Option(
        help="Your approver key (default: RECON_APPROVER_KEY).")] = None,
) -> None:
    """Post an undone night (or one supplier of it) again, exactly once, under fresh keys."""
    from recon.domain.money import rupees
    from recon.domain.requests import REDO
    from recon.ops.redo import start_redo

    wid = checked_run_id(run_id)
    if not reason.strip() or (by is not None and not by.strip()):
        raise Refused("--reason and --by must say why and who")

    async def go():
        async with database() as pool:
            signed = await _signed(pool, key, REDO, run=wid, supplier=supplier, references=[],
                                   reason=reason, by=by)
            client = await temporal()
            handle, ledger, stock, generation = await start_redo(
                client, pool, load_settings(), wid, supplier, reason, signed)
            console.print(f"redo {handle.id} started: {ledger} ledger entries and {stock} stock "
                          f"movements to post again (generation {generation})",
                          markup=False, highlight=False)
            return await wait_for(handle)

    summary = asyncio.run(go())
    console.print(f"redo finished: {summary.ledger_posted} live ledger entries in {wid}, "
                  f"{rupees(summary.adjustment_total_paise)}", markup=False, highlight=False)


@user_errors
def mail(
    target: Annotated[str | None, typer.Argument(
        metavar="[RUN | show KEY | resend KEY | dismiss KEY]",
        help="A run to list its messages (all runs if omitted), or an action on one message.")] = None,
    key: Annotated[str | None, typer.Argument(metavar="", show_default=False)] = None,
    by: Annotated[str | None, typer.Option(
        help="resend, dismiss: must be the owner of the key (default: the key's owner).")] = None,
    to: Annotated[str | None, typer.Option(help="resend: a corrected address.")] = None,
    note: Annotated[str, typer.Option(help="Why, for the record.")] = "",
    signing_key: Annotated[Path | None, typer.Option(
        "--key", help="resend, dismiss: your approver key (default: RECON_APPROVER_KEY).")] = None,
) -> None:
    """The outbox as mail: each message's state, one message in full, or answer a refused one
    (resend, dismiss: signed with your approver key)."""
    from recon.cli.mail import mail_command

    if by is not None and not by.strip():
        raise Refused("say who decides (--by NAME), or leave --by out: the key says who")

    async def go():
        async with database() as pool:
            await mail_command(pool, console, target, key, by=by, to=to, note=note,
                               signing_key=signing_key)

    asyncio.run(go())


@user_errors
def undo(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    reason: Annotated[str, typer.Option(help="Why, for the record.")],
    by: Annotated[str | None, typer.Option(
        help="Who decides: must be the owner of the key (default: the key's owner).")] = None,
    supplier: Annotated[str | None, typer.Option(help="Undo only this supplier's part.")] = None,
    reference: Annotated[list[str] | None, typer.Option(
        "--reference", help="Undo only these ledger references (repeatable).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be reversed.")] = False,
    key: Annotated[Path | None, typer.Option(
        help="Your approver key (default: RECON_APPROVER_KEY).")] = None,
) -> None:
    """Compensate a finished run (or one supplier of it): reversals, opposite stock, withdrawals."""
    from recon.domain.requests import UNDO
    from recon.ops.undo import describe_plan, start_undo

    wid = checked_run_id(run_id)
    if not reason.strip() or (by is not None and not by.strip()):
        raise Refused("--reason and --by must say why and who")
    if supplier and reference:
        raise Refused("give --supplier or --reference, not both")

    async def go():
        async with database() as pool:
            client = await temporal()
            if dry_run:
                return await describe_plan(client, pool, wid, supplier, reference or [])
            signed = await _signed(pool, key, UNDO, run=wid, supplier=supplier,
                                   references=reference or [], reason=reason, by=by)
            return await start_undo(client, pool, load_settings(), wid, supplier, reference or [],
                                    reason, signed)

    for line in asyncio.run(go()):
        console.print(printable(line), markup=False, highlight=False)


async def _signed(pool, key: Path | None, purpose: str, *, run: str, supplier: str | None,
                  references: list[str], reason: str, by: str | None):
    """An undo or redo request signed with the approver key at hand (--key or
    RECON_APPROVER_KEY); `--by`, if given, must name its owner. The workflow checks it."""
    from recon.cli.approvers import approver_key
    from recon.ops.requests import signed_request

    signing_key = approver_key(key)
    if signing_key is None:
        raise Refused("undo and redo are signed: set RECON_APPROVER_KEY to your approver key or "
                      "pass --key PATH")
    return await signed_request(pool, signing_key, purpose, run=run, supplier=supplier,
                                references=references, reason=reason, by=by)
