"""Commands that load a night's invoices: `recon seed` and `recon import`."""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from temporalio.service import RPCError

from recon.cli.common import (
    MAX_SEED_INVOICES,
    MAX_SEED_VALUE,
    business_date,
    console,
    database,
    fail,
    one_line,
    temporal,
    user_errors,
    warehouse_code,
)
from recon.domain.errors import NightStarted, Refused
from recon.domain.wording import count
from recon.runtime.config import load_settings


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
    format_: Annotated[str, typer.Option(
        "--format", help="Documents as text, ubl, gst, cii, facturx, pdf or mixed.")] = "text",
    nights: Annotated[int, typer.Option(
        help="Consecutive nights from --date, with orders that span them (1: one night).")] = 1,
) -> None:
    """Create a deterministic, realistic night of invoices, orders and receipts (or a month of
    them with --nights)."""
    from recon.tools.seed import seed_night

    day, wh = business_date(date_), warehouse_code(warehouse)
    if mismatches > invoices:
        raise Refused(f"--mismatches {mismatches} is more than --invoices {invoices}")
    from recon.tools.seed_formats import SEED_FORMATS

    if format_ not in SEED_FORMATS:
        raise Refused(f"--format must be one of {', '.join(SEED_FORMATS)}, got {format_!r}")
    if nights != 1:
        _seed_month(day, wh, nights, invoices, mismatches, seed_, format_)
        return

    async def go():
        async with database() as pool:
            return await seed_night(pool, day, wh, invoices, mismatches, seed_, format_)

    result = asyncio.run(go())
    console.print(
        f"seeded {count(result.invoices, 'invoice')} for {day} at {wh}: "
        f"{count(len(result.adjustments), 'adjustment')} due, {len(result.unreadable)} unreadable, "
        f"{len(result.no_po_invoices)} citing no PO, "
        f"{count(len(result.unknown_sku_lines), 'unknown SKU line')}"
    )


def _seed_month(day: str, wh: str, nights: int, invoices: int, mismatches: int, seed: int,
                fmt: str) -> None:
    """`recon seed --nights N`: a line for the month, then one per night with what it must do."""
    from recon.tools.seed import seed_month
    from recon.tools.seed_months import check_month, grace_days_of

    grace = grace_days_of(load_settings())
    check_month(day, nights, invoices, grace)

    async def go():
        async with database() as pool:
            return await seed_month(pool, day, wh, nights, invoices, mismatches, seed, fmt, grace)

    month = asyncio.run(go())
    say = functools.partial(console.print, markup=False, highlight=False, soft_wrap=True)
    say(f"seeded {count(nights, 'night')} from {day} at {wh}: {count(month.invoices, 'invoice')} "
        f"(receipt grace {count(grace, 'day')})")
    for n in month.nights:
        kinds = Counter(a.kind for a in n.claims)
        say(f"  {n.business_date}: {count(n.invoices, 'invoice')}, {count(len(n.claims), 'claim')} "
            f"due ({kinds['qty']} qty, {kinds['price']} price), {count(len(n.held), 'line')} held "
            f"awaiting receipt, {count(len(n.duplicates), 'possible duplicate')}, "
            f"{len(n.seeded.unreadable)} unreadable, {len(n.seeded.no_po_invoices)} citing no PO, "
            f"{count(len(n.seeded.unknown_sku_lines), 'unknown SKU line')}")


@user_errors
def import_(
    date_: Annotated[str, typer.Option("--date", help="Business date, YYYY-MM-DD.")],
    warehouse: Annotated[str, typer.Option(help="Warehouse code.")],
    folder: Annotated[Path | None, typer.Argument(
        help="Folder of invoice documents, one per file (any format recon reads).")] = None,
    supplier: Annotated[str | None, typer.Option(
        help="Sender of documents that do not say who sent them.")] = None,
    maildir: Annotated[Path | None, typer.Option(
        help="A Maildir of supplier mail: each message's attachments (and an invoice body).")] = None,
    replace: Annotated[bool, typer.Option(
        "--replace", help="A supplier's number already stored with another document takes the "
                          "new one (only while neither night has started).")] = False,
) -> None:
    """Load invoice documents (GST e-invoice, UBL, CII, Factur-X, PDF, text) from a folder or a
    Maildir. The document names itself: number, sender, PO and lines come from it."""
    if (folder is None) == (maildir is None):
        raise Refused("give a FOLDER or --maildir DIR (one of them)")
    day, wh = business_date(date_), warehouse_code(warehouse)

    async def go():
        async with database() as pool:
            try:
                if maildir is not None:
                    from recon.documents.inbox import import_maildir

                    return await import_maildir(pool, maildir, day, wh, supplier, replace)
                from recon.documents.importer import import_directory

                return await import_directory(pool, folder, day, wh, supplier, replace)
            except NightStarted as exc:
                raise exc.with_status(await _night_label(exc.workflow_id)) from None

    result = asyncio.run(go())
    from recon.cli.intake_report import report

    for line in report(result, day, wh):
        console.print(one_line(line), markup=False, highlight=False)
    refused = result.intake.refused if result.intake is not None else []
    if refused:  # the others are imported (said above); the exit says not everything was
        fail(f"{len(refused)} file(s) refused, each alone (the others as said above): "
             + "; ".join(refused))


async def _night_label(workflow_id: str) -> str:
    """The night's status from Temporal when it answers within a few seconds, else "started"
    (the store already decided: its working set exists)."""
    from recon.domain.errors import Refusal
    from recon.ops.status import night_label

    async def ask() -> str:
        return await night_label(await temporal(), workflow_id)

    try:
        return await asyncio.wait_for(ask(), 5)
    except (Refusal, RPCError, TimeoutError, OSError, RuntimeError):
        return "started"


@user_errors
def supplier(
    supplier_id: Annotated[str, typer.Argument(help="Supplier code, e.g. S001.")],
    gstin: Annotated[str | None, typer.Option(help="GSTIN its e-invoices carry.")] = None,
    vat_id: Annotated[str | None, typer.Option(help="VAT id its UBL/CII invoices carry.")] = None,
    endpoint: Annotated[str | None, typer.Option(
        help="Peppol endpoint as scheme:id, e.g. 0088:7300010000001.")] = None,
    currency: Annotated[str | None, typer.Option(
        help="ISO currency it bills in (its orders are priced in it); default INR.")] = None,
) -> None:
    """Show a supplier's document ids, or set them (how imported documents find their sender)."""
    from recon.cli.intake_report import set_supplier

    async def go():
        async with database() as pool:
            return await set_supplier(pool, supplier_id, gstin, vat_id, endpoint, currency)

    console.print(one_line(asyncio.run(go())), markup=False, highlight=False)
