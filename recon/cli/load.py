"""`recon load suppliers|orders|receipts|conversions|hsn-rates FILE.csv`: master data from an ERP
export, one file at a time, all or nothing. Load suppliers first, then orders, then receipts (each
refers to the one before). One summary line per file; a refusal is one line naming `file:line: field`.
An ERP that writes DD-MM-YYYY dates or Indian-grouped amounts is declared with `--date-format` and
`--amount-format` (recon/domain/cell_formats.py)."""

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
DateFormat = Annotated[str | None, typer.Option(
    "--date-format", help="How the file writes dates: YYYY-MM-DD (the default), DD-MM-YYYY, "
    "DD/MM/YYYY or DD.MM.YYYY (Tally, Busy). Declared, never guessed per cell.")]
AmountFormat = Annotated[str | None, typer.Option(
    "--amount-format", help="How the file writes amounts: plain (1250.50, the default) or indian "
    "(1,45,000.00; a misgrouped 14,5000.00 is refused).")]


def _load(loader_name: str, file: Path, date_format: str | None = None,
          amount_format: str | None = None) -> None:
    from recon.documents import master_load
    from recon.domain.cell_formats import CellFormats

    loader = getattr(master_load, loader_name)
    formats = CellFormats.of(date_format, amount_format)  # a bad format: one line, before any I/O

    async def go():
        async with database() as pool:
            return await loader(pool, file, formats)

    summary = asyncio.run(go())
    console.print(one_line(summary.line()), markup=False, highlight=False, soft_wrap=True)


@app.command("suppliers")
@user_errors
def suppliers(file: Annotated[Path, _FILE]) -> None:
    """Suppliers: supplier_id,name,email[,gstin][,currency]."""
    _load("load_suppliers", file)


@app.command("orders")
@user_errors
def orders(file: Annotated[Path, _FILE], date_format: DateFormat = None,
           amount_format: AmountFormat = None) -> None:
    """PO lines: po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,unit_price
    [,tax_rate][,unit]."""
    _load("load_orders", file, date_format, amount_format)


@app.command("hsn-rates")
@user_errors
def hsn_rates(file: Annotated[Path, _FILE], date_format: DateFormat = None,
              amount_format: AmountFormat = None) -> None:
    """GST rates by HSN code and date: hsn,tax_rate,valid_from (for PO lines that state none)."""
    _load("load_hsn_rates", file, date_format, amount_format)


@app.command("receipts")
@user_errors
def receipts(file: Annotated[Path, _FILE], date_format: DateFormat = None,
             amount_format: AmountFormat = None) -> None:
    """Goods receipts: receipt_id,po_number,sku,warehouse,qty_received,received_on."""
    _load("load_receipts", file, date_format, amount_format)


@app.command("conversions")
@user_errors
def conversions(file: Annotated[Path, _FILE]) -> None:
    """A supplier's packs per SKU: supplier_id,sku,unit,per,base_unit (a BX of 12 C62)."""
    _load("load_conversions", file)
