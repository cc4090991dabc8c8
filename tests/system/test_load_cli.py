"""`recon load` as a user runs it (`python -m recon.cli load ...` in a subprocess): the example
files of the repository load into a fresh database and an example invoice folder reconciles on
them; a bad row in the middle of a file is one error line naming the file, line and field, with a
non-zero exit, no traceback and nothing written; loading a file twice says nothing changed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from recon.store.db import connect_pool
from tests.helpers import ROOT, recon_cli

EXAMPLES = ROOT / "examples"


@contextlib.asynccontextmanager
async def fresh_database(server_url: str, name: str) -> AsyncIterator[tuple[str, asyncpg.Pool]]:
    """An empty database on the session's Postgres, as a new `recon dev` has; dropped after."""
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    pool = await connect_pool(url)
    try:
        yield url, pool
    finally:
        await pool.close()
        admin = await asyncpg.connect(server_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def _cli(env: dict[str, str], *args: str):
    return await asyncio.to_thread(recon_cli, env, *args, timeout=120)


def _one_error_line(done) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def _examples_for(warehouse: str, into: Path) -> Path:
    """The example files with their warehouse `ldh` renamed to this test's own (the session's
    Temporal server is shared: the night's workflow id must be this test's alone)."""
    into.mkdir()
    for name in ("suppliers.csv", "orders.csv", "receipts.csv"):
        text = (EXAMPLES / "master-data" / name).read_text()
        (into / name).write_text(text.replace(",ldh,", f",{warehouse},"))
    shutil.copytree(EXAMPLES / "invoices", into / "invoices")
    return into


async def test_the_examples_load_into_a_fresh_database_and_reconcile(stack, night, tmp_path,
                                                                     spawn_worker) -> None:
    day, wh, queue = night
    files = _examples_for(wh, tmp_path / "examples")
    async with fresh_database(stack.database_url, f"examples_{os.getpid()}_{wh}") as (url, pool):
        env = stack.env(DATABASE_URL=url, RECON_TASK_QUEUE=queue)
        for kind, summary in (("suppliers", "3 suppliers: 3 new, 0 changed, 0 unchanged"),
                              ("orders", "4 PO lines (3 new POs): 4 new, 0 amended, 0 unchanged"),
                              ("receipts", "4 receipts: 4 new, 0 changed, 0 unchanged")):
            done = await _cli(env, "load", kind, str(files / f"{kind}.csv"))
            assert done.returncode == 0, done.stderr
            assert done.stdout == f"{files / kind}.csv: {summary}\n"
        again = await _cli(env, "load", "orders", str(files / "orders.csv"))
        assert again.returncode == 0 and again.stdout.strip().endswith(
            "0 new, 0 amended, 4 unchanged; nothing to change: already loaded"), again.stdout
        assert await pool.fetchval("SELECT gstin FROM suppliers WHERE supplier_id = 'S101'") == (
            "03AABCS4821K1ZJ")
        assert await pool.fetchval("SELECT unit_price_paise FROM po_lines WHERE sku = 'SKU-1007'") == 18550

        imported = await _cli(env, "import", str(files / "invoices"), "--date", day, "--warehouse", wh)
        assert imported.returncode == 0, imported.stderr
        spawn_worker(queue, DATABASE_URL=url)
        ran = await _cli(env, "run", "--date", day, "--warehouse", wh, "--wait")
        assert ran.returncode == 0, (ran.stdout, ran.stderr)
        ledger = await pool.fetch("SELECT invoice_no, supplier_id, kind, amount_paise FROM ledger_entries")
        # MS-0042 bills turmeric at ₹52.00 against the PO's ₹48: 150 x ₹4 = ₹600; the rest is
        # clean. The run names the invoice by its reference: supplier, then its number.
        assert [tuple(r) for r in ledger] == [("S103:MS-0042", "S103", "price", 60_000)]
        assert await pool.fetchval("SELECT count(*) FROM parked_items") == 0


async def test_a_bad_row_in_the_middle_writes_nothing(stack, pool, night, tmp_path) -> None:
    _day, wh, _queue = night
    env = stack.env()
    suppliers = tmp_path / "suppliers.csv"
    suppliers.write_text(f"supplier_id,name,email\nS-{wh},Sharma Foods,ap@sharma.example\n")
    assert (await _cli(env, "load", "suppliers", str(suppliers))).returncode == 0
    rows = [f"PO-{wh}-{n},S-{wh},{wh},2026-10-01,SKU-{n},Rice 5kg,{n * 10},450.00" for n in range(1, 10)]
    rows[5] = f"PO-{wh}-6,S-{wh},{wh},2026-10-01,SKU-6,Rice 5kg,-3,450.00"
    orders = tmp_path / "orders.csv"
    orders.write_bytes(("\ufeffpo_number,supplier_id,warehouse,ordered_on,sku,description,"
                        "qty_ordered,unit_price\r\n" + "\r\n".join(rows) + "\r\n").encode())
    done = await _cli(env, "load", "orders", str(orders))
    assert _one_error_line(done) == (
        f'error: {orders}:7: qty_ordered: must be a whole number above 0, got "-3"')
    assert done.stdout == ""
    assert await pool.fetchval("SELECT count(*) FROM purchase_orders WHERE warehouse = $1", wh) == 0

    # The same file with the row put right loads whole, once.
    orders.write_text(orders.read_text(encoding="utf-8-sig").replace(",-3,", ",60,"))
    first = await _cli(env, "load", "orders", str(orders))
    assert first.returncode == 0 and first.stdout.strip() == (
        f"{orders}: 9 PO lines (9 new POs): 9 new, 0 amended, 0 unchanged"), first.stdout

    # A receipt in the middle naming a PO nobody loaded: refused by name, nothing written.
    receipts = tmp_path / "receipts.csv"
    receipts.write_text("receipt_id,po_number,sku,warehouse,qty_received,received_on\n"
                        f"GRN-{wh}-1,PO-{wh}-1,SKU-1,{wh},10,2026-10-02\n"
                        f"GRN-{wh}-2,PO-{wh}-77,SKU-1,{wh},10,2026-10-02\n"
                        f"GRN-{wh}-3,PO-{wh}-3,SKU-3,{wh},30,2026-10-02\n")
    assert _one_error_line(await _cli(env, "load", "receipts", str(receipts))) == (
        f"error: {receipts}:3: po_number: unknown PO PO-{wh}-77 (load it first: recon load orders "
        "FILE.csv)")
    assert await pool.fetchval("SELECT count(*) FROM goods_receipts WHERE warehouse = $1", wh) == 0


async def test_files_that_cannot_be_read(stack, tmp_path) -> None:
    env = stack.env()
    missing = _one_error_line(await _cli(env, "load", "receipts", str(tmp_path / "nope.csv")))
    assert missing == f"error: cannot read {tmp_path / 'nope.csv'}: No such file or directory"
    assert _one_error_line(await _cli(env, "load", "orders", str(tmp_path))) == (
        f"error: {tmp_path} is not a regular file")
    header = tmp_path / "suppliers.csv"
    header.write_text("supplier,name,email\nS1,A,a@b.example\n")
    assert _one_error_line(await _cli(env, "load", "suppliers", str(header))) == (
        f"error: {header}:1: header: unknown column 'supplier'; the columns are "
        "supplier_id,name,email[,gstin][,currency]")


async def test_a_tally_export_loads_when_its_formats_are_declared(stack, pool, night, tmp_path) -> None:
    """`--date-format DD-MM-YYYY --amount-format indian`: read exactly as declared; undeclared, the
    same file is refused by line as before; a misgrouped amount names its line."""
    _day, wh, _queue = night
    env = stack.env()
    suppliers = tmp_path / "suppliers.csv"
    suppliers.write_text(f"supplier_id,name,email\nT-{wh},Tally Traders,ap@tally.example\n")
    assert (await _cli(env, "load", "suppliers", str(suppliers))).returncode == 0
    orders = tmp_path / "orders.csv"
    head = "po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,unit_price\n"
    orders.write_text(head + f"PO-{wh}-1,T-{wh},{wh},05-11-2026,SKU-1,Tractor part,2,145000.00\n")
    undeclared = await _cli(env, "load", "orders", str(orders))
    assert _one_error_line(undeclared) == (
        f'error: {orders}:2: ordered_on: must be a date YYYY-MM-DD, got "05-11-2026"')
    orders.write_text(head + f'PO-{wh}-1,T-{wh},{wh},05-11-2026,SKU-1,Tractor part,2,"1,45,000.00"\n')
    declared = await _cli(env, "load", "orders", str(orders), "--date-format", "DD-MM-YYYY",
                          "--amount-format", "indian")
    assert declared.returncode == 0, declared.stderr
    row = await pool.fetchrow("SELECT o.ordered_on::text AS day, l.unit_price_paise FROM purchase_orders o"
                              " JOIN po_lines l USING (po_number) WHERE o.po_number = $1", f"PO-{wh}-1")
    assert (row["day"], row["unit_price_paise"]) == ("2026-11-05", 14_500_000)
    orders.write_text(head + f'PO-{wh}-2,T-{wh},{wh},05-11-2026,SKU-1,Tractor part,2,"14,5000.00"\n')
    misgrouped = await _cli(env, "load", "orders", str(orders), "--date-format", "DD-MM-YYYY",
                            "--amount-format", "indian")
    assert _one_error_line(misgrouped).startswith(
        f"error: {orders}:2: unit_price: must be rupees in Indian grouping like 1,45,000.00")
    unknown = await _cli(env, "load", "orders", str(orders), "--date-format", "MM/DD/YY")
    assert _one_error_line(unknown).startswith("error: --date-format takes YYYY-MM-DD, DD-MM-YYYY")
