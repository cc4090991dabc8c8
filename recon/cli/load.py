"""`recon load suppliers|orders|receipts|conversions|hsn-rates FILE.csv`: master data from an ERP
export, one file at a time, all or nothing. Load suppliers first, then orders, then receipts (each
refers to the one before). One summary line per file; a refusal is one line naming `file:line: field`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from recon.cli.common import console, database, one_line, user_errors

app = typer.Typer(
    help="Load master data from an ERP export (CSV): suppliers, orders, receipts, conversions.",
    no_args_is_help=True,
    add_completion=False,
)

_FILE = typer.Argument(help="The CSV file (UTF-8, header line first).")


def _load(loader_name: str, file: Path) -> None:
    from recon.documents import master_load

    loader = getattr(master_load, loader_name)

    async def go():
        async with database() as pool:
            return await loader(pool, file)

    summary = asyncio.run(go())
    console.print(one_line(summary.line()), markup=False, highlight=False, soft_wrap=True)


@app.command("suppliers")
@user_errors
def suppliers(file: Annotated[Path, _FILE]) -> None:
    """Suppliers: supplier_id,name,email[,gstin][,currency]."""
    _load("load_suppliers", file)


@app.command("orders")
@user_errors
def orders(file: Annotated[Path, _FILE]) -> None:
    """PO lines: po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,unit_price
    [,tax_rate][,unit]."""
    _load("load_orders", file)


@app.command("hsn-rates")
@user_errors
def hsn_rates(file: Annotated[Path, _FILE]) -> None:
    """GST rates by HSN code and date: hsn,tax_rate,valid_from (for PO lines that state none)."""
    _load("load_hsn_rates", file)


@app.command("receipts")
@user_errors
def receipts(file: Annotated[Path, _FILE]) -> None:
    """Goods receipts: receipt_id,po_number,sku,warehouse,qty_received,received_on."""
    _load("load_receipts", file)


@app.command("conversions")
@user_errors
def conversions(file: Annotated[Path, _FILE]) -> None:
    """A supplier's packs per SKU: supplier_id,sku,unit,per,base_unit (a BX of 12 C62)."""
    _load("load_conversions", file)
