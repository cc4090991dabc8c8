"""`recon redo`: post an undone night (or one supplier of it) again, exactly once, as a signed
request (recon/ops/redo.py)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from recon.cli.common import checked_run_id, console, database, temporal, user_errors
from recon.cli.runs import wait_for
from recon.cli.undo import ByOpt, KeyOpt, ReasonOpt, RunArg, signed_request_at_hand
from recon.domain.errors import Refused
from recon.runtime.config import load_settings


@user_errors
def redo(
    run_id: RunArg, reason: ReasonOpt, by: ByOpt = None,
    supplier: Annotated[str | None, typer.Option(help="Redo only this supplier's part.")] = None,
    key: KeyOpt = None,
) -> None:
    """Post an undone night (or one supplier of it) again, exactly once, under fresh keys."""
    from recon.domain.requests import REDO
    from recon.ops.redo import start_redo

    wid = checked_run_id(run_id)
    if not reason.strip() or (by is not None and not by.strip()):
        raise Refused("--reason and --by must say why and who")

    async def go():
        async with database() as pool:
            signed = await signed_request_at_hand(pool, key, REDO, run=wid, supplier=supplier,
                                                  references=[],
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
                  f"{summary.adjustments_in_words()}", markup=False, highlight=False)
