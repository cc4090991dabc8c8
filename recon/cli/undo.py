"""`recon undo`: take a finished night (or one supplier of it) back, as a signed request
(recon/ops/undo.py). `recon redo` (redo.py) signs its request the same way, with
`signed_request_at_hand`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from recon.cli.common import checked_run_id, console, database, temporal, user_errors
from recon.domain.errors import Refused
from recon.domain.printable import printable
from recon.runtime.config import load_settings

# What undo and redo ask alike: a signed request names the run, why, and who with which key.
RunArg = Annotated[str, typer.Argument(metavar="RUN")]
ReasonOpt = Annotated[str, typer.Option(help="Why, for the record.")]
ByOpt = Annotated[str | None, typer.Option(
    help="Who decides: must be the owner of the key (default: the key's owner).")]
KeyOpt = Annotated[Path | None, typer.Option(help="Your approver key (default: RECON_APPROVER_KEY).")]


@user_errors
def undo(
    run_id: RunArg, reason: ReasonOpt, by: ByOpt = None,
    supplier: Annotated[str | None, typer.Option(help="Undo only this supplier's part.")] = None,
    reference: Annotated[list[str] | None, typer.Option(
        "--reference", help="Undo only these ledger references (repeatable).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be reversed.")] = False,
    key: KeyOpt = None,
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
            signed = await signed_request_at_hand(pool, key, UNDO, run=wid, supplier=supplier,
                                   references=reference or [], reason=reason, by=by)
            return await start_undo(client, pool, load_settings(), wid, supplier, reference or [],
                                    reason, signed)

    for line in asyncio.run(go()):
        console.print(printable(line), markup=False, highlight=False)


async def signed_request_at_hand(pool, key: Path | None, purpose: str, *, run: str,
                                  supplier: str | None, references: list[str], reason: str,
                                  by: str | None):
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
