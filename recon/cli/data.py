"""Commands that load a night's invoices: `recon seed` and `recon import`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from recon.cli.common import (
    MAX_SEED_INVOICES,
    MAX_SEED_VALUE,
    business_date,
    console,
    database,
    one_line,
    user_errors,
    warehouse_code,
)
from recon.domain.errors import Refused


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
    from recon.documents.seed import seed_night

    day, wh = business_date(date_), warehouse_code(warehouse)
    if mismatches > invoices:
        raise Refused(f"--mismatches {mismatches} is more than --invoices {invoices}")

    async def go():
        async with database() as pool:
            return await seed_night(pool, day, wh, invoices, mismatches, seed_)

    result = asyncio.run(go())
    console.print(
        f"seeded {result.invoices} invoices for {day} at {wh}: {len(result.adjustments)} "
        f"adjustments due, {len(result.unreadable)} unreadable, {len(result.no_po_invoices)} "
        f"citing no PO, {len(result.unknown_sku_lines)} unknown SKU lines"
    )


@user_errors
def import_(
    folder: Annotated[Path, typer.Argument(help="Folder of invoice documents, one per file.")],
    date_: Annotated[str, typer.Option("--date", help="Business date, YYYY-MM-DD.")],
    warehouse: Annotated[str, typer.Option(help="Warehouse code.")],
    supplier: Annotated[str | None, typer.Option(help="Sender for files that do not name one.")] = None,
) -> None:
    """Load invoice documents from files (file name = invoice number)."""
    from recon.documents.importer import import_directory

    day, wh = business_date(date_), warehouse_code(warehouse)

    async def go():
        async with database() as pool:
            return await import_directory(pool, folder, day, wh, supplier)

    result = asyncio.run(go())
    console.print(f"imported {result.imported} invoices for {day} at {wh}"
                  + (f"; {result.skipped_existing} already there" if result.skipped_existing else ""))
    if result.skipped_files:
        console.print(one_line(f"skipped {len(result.skipped_files)} not invoice files: "
                                + ", ".join(result.skipped_files)), markup=False, highlight=False)
