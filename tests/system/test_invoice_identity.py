"""An invoice is (supplier, number), through `recon import` of files and a real run: two
suppliers' INV-7001 are two invoices, both reconciled under distinct keys; the same file again is
"already there"; another document under the same number is refused naming both unless
`--replace` comes before the night has started; and a night that has started takes no imports."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta
from pathlib import Path

import asyncpg
from temporalio.client import Client

from recon.documents.layouts import Document, DocumentLine, render
from tests.helpers import inprocess_worker, recon_cli, settings_for, start

NUMBER = "INV-7001"


class Night:
    """Two suppliers of one test, each with a PO of one line: S001's PO of 8 received in full (a
    bill of 10 claims the 2 beyond the order), S002's PO at ₹50 received in full (a bill at ₹60
    claims the price)."""

    def __init__(self, day: str, warehouse: str, tmp: Path) -> None:
        tag = warehouse.upper()
        self.day, self.warehouse, self.tmp = day, warehouse, tmp
        self.s1, self.s2 = f"S001-{tag}", f"S002-{tag}"
        self.po1, self.po2 = f"PO-{tag}-1", f"PO-{tag}-2"

    async def create(self, pool: asyncpg.Pool) -> None:
        for sid, po, price, received in ((self.s1, self.po1, 10_000, 8),
                                         (self.s2, self.po2, 5_000, 5)):
            await pool.execute("INSERT INTO suppliers (supplier_id, name, email) VALUES"
                               " ($1, $1 || ' Ltd', lower($1) || '@supplier.example')", sid)
            await pool.execute("INSERT INTO purchase_orders VALUES ($1, $2, $3, $4::text::date)",
                               po, sid, self.warehouse, self.day)
            await pool.execute("INSERT INTO po_lines VALUES ($1, 'SKU-1001', 'Rice', $2, $3)",
                               po, 8 if sid == self.s1 else 5, price)
            await pool.execute("INSERT INTO goods_receipts (po_number, sku, warehouse,"
                               " qty_received, received_on) VALUES ($1, 'SKU-1001', $2, $3,"
                               " $4::text::date)", po, self.warehouse, received, self.day)

    def folder(self, name: str, files: dict[str, tuple[str, str, int, int]]) -> Path:
        """{file name: (supplier, number, qty, unit price in paise)}, one table-layout text each."""
        where = self.tmp / name
        where.mkdir()
        for file, (sid, number, qty, price) in files.items():
            po = self.po1 if sid == self.s1 else self.po2
            doc = Document(number, sid, f"{sid} Ltd", self.day, po,
                           [DocumentLine("SKU-1001", "Rice", qty, price)])
            (where / file).write_text(render(doc, "table"))
        return where

    async def run_import(self, stack, folder: Path, *extra: str, day: str | None = None):
        return await asyncio.to_thread(recon_cli, stack.env(), "import", str(folder), "--date",
                                       day or self.day, "--warehouse", self.warehouse, *extra)


def _one_error_line(done) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr
    return lines[0]


async def _invoices(pool: asyncpg.Pool, n: Night) -> dict[tuple[str, str], tuple[str, str]]:
    rows = await pool.fetch("SELECT supplier_id, invoice_no, business_date::text AS d, document"
                            " FROM invoices WHERE supplier_id = ANY($1)", [n.s1, n.s2])
    return {(r["supplier_id"], r["invoice_no"]): (r["d"], r["document"]) for r in rows}


async def test_two_suppliers_one_number_and_the_import_rules(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    day, warehouse, queue = night
    n = Night(day, warehouse, tmp_path)
    await n.create(pool)
    first = n.folder("first", {"s1.txt": (n.s1, NUMBER, 10, 10_000),
                               "s2.txt": (n.s2, NUMBER, 5, 6_000)})

    # The same number from two suppliers: two invoices.
    done = await n.run_import(stack, first)
    assert done.returncode == 0, done.stderr
    assert f"imported 2 invoices for {day} at {warehouse}" in done.stdout
    stored = await _invoices(pool, n)
    assert set(stored) == {(n.s1, NUMBER), (n.s2, NUMBER)}

    # The same files again: already there, nothing changes.
    again = await n.run_import(stack, first)
    assert again.returncode == 0 and "imported 0 invoices" in again.stdout
    assert "2 already there" in again.stdout
    assert await _invoices(pool, n) == stored

    # Another document under S001's INV-7001: refused naming both, nothing written.
    fixed = n.folder("fixed", {"s1-corrected.txt": (n.s1, NUMBER, 9, 10_000)})
    line = _one_error_line(await n.run_import(stack, fixed))
    assert NUMBER in line and n.s1 in line and "--replace" in line
    assert "s1.txt" in line and f"night of {day} at {warehouse}" in line, "the one already there"
    assert "s1-corrected.txt" in line, "and the new file"
    assert await _invoices(pool, n) == stored

    # --replace before the night has started: the new document takes the old one's place.
    replaced = await n.run_import(stack, fixed, "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert "replaced 1" in replaced.stdout and NUMBER in replaced.stdout
    now = await _invoices(pool, n)
    assert now[(n.s2, NUMBER)] == stored[(n.s2, NUMBER)]
    assert now[(n.s1, NUMBER)] != stored[(n.s1, NUMBER)] and " 9 " in now[(n.s1, NUMBER)][1]

    # Both reconciled: S001's corrected bill claims 1 unit short (₹100), S002's the price (₹50).
    settings = settings_for(queue, gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        result = await handle.result()
    wf = handle.id
    assert result.status == "Completed" and result.invoices == 2 and result.parked == 0
    ledger = {(r["reference"], r["supplier_id"], r["amount_paise"]) for r in await pool.fetch(
        "SELECT * FROM ledger_entries WHERE workflow_id = $1", wf)}
    assert ledger == {(f"{wf}:{n.s1}:{NUMBER}:1:qty", n.s1, 10_000),
                      (f"{wf}:{n.s2}:{NUMBER}:1:price", n.s2, 5_000)}
    moves = {r["key"] for r in await pool.fetch(
        "SELECT key FROM stock_movements WHERE workflow_id = $1", wf)}
    assert moves == {f"{wf}:stock:{n.s1}:{NUMBER}:1", f"{wf}:stock:{n.s2}:{NUMBER}:1"}
    notes = {r["supplier_id"]: r["body"] for r in await pool.fetch(
        "SELECT supplier_id, body FROM outbox WHERE workflow_id = $1 AND kind = 'debit-note'", wf)}
    assert set(notes) == {n.s1, n.s2}
    for sid, body in notes.items():
        assert f"{NUMBER} line 1" in body and f"{sid}:{NUMBER}" not in body, "its own number"
    written = await pool.fetchval("SELECT count(*) FROM ledger_entries WHERE workflow_id = $1", wf)

    # The files of the night again, after it ran: already there, nothing changes.
    same = n.folder("same", {"s1-corrected.txt": (n.s1, NUMBER, 9, 10_000),
                             "s2.txt": (n.s2, NUMBER, 5, 6_000)})
    after = await n.run_import(stack, same)
    assert after.returncode == 0 and "2 already there" in after.stdout, after.stderr

    # --replace once the night has started: refused with the night and its status.
    line = _one_error_line(await n.run_import(stack, first, "--replace"))
    assert wf in line and "(Completed)" in line and NUMBER in line and n.s1 in line
    assert "cannot be replaced" in line and "credit note" in line
    assert await _invoices(pool, n) == now
    # and without --replace, the same: its night has read the bill
    line = _one_error_line(await n.run_import(stack, first))
    assert wf in line and "cannot be replaced" in line and "s1.txt" in line

    # A new invoice into the completed night: refused with the night id, its status and how to
    # put it on a later night; nothing written. The later night takes it.
    later = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    late = n.folder("late", {"late.txt": (n.s1, "INV-7002", 1, 10_000)})
    line = _one_error_line(await n.run_import(stack, late))
    assert wf in line and "(Completed)" in line and "INV-7002" in line
    assert f"--date {later}" in line
    assert await _invoices(pool, n) == now
    assert await pool.fetchval(
        "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1", wf) == written
    moved = await n.run_import(stack, late, day=later)
    assert moved.returncode == 0 and "imported 1 invoice for" in moved.stdout, moved.stderr
    assert (await _invoices(pool, n))[(n.s1, "INV-7002")][0] == later


async def test_the_working_set_decides_whether_a_night_has_started(
        pool: asyncpg.Pool, stack, night, tmp_path: Path) -> None:
    """Until step 1 copies the night, what is imported is in it, so the import is taken; once
    the working set exists, it is refused, with "started" when Temporal has no run to say more."""
    day, warehouse, _queue = night
    n = Night(day, warehouse, tmp_path)
    await n.create(pool)
    one = n.folder("one", {"s1.txt": (n.s1, NUMBER, 10, 10_000)})
    assert (await n.run_import(stack, one)).returncode == 0
    wf = f"recon-{day}-{warehouse}"
    assert not await pool.fetchval("SELECT count(*) FROM run_invoices WHERE workflow_id = $1", wf)
    two = n.folder("two", {"s2.txt": (n.s2, NUMBER, 5, 6_000)})
    done = await n.run_import(stack, two)
    assert done.returncode == 0 and "imported 1 invoice for" in done.stdout, done.stderr
    # Once step 1 has copied the night, the same import of a third invoice is refused.
    await pool.execute(
        "INSERT INTO run_invoices (workflow_id, invoice_no, seq, supplier_id, document)"
        " VALUES ($1, $2, 1, $3, 'x')", wf, f"{n.s1}:{NUMBER}", n.s1)
    three = n.folder("three", {"s2b.txt": (n.s2, "INV-7003", 5, 6_000)})
    line = _one_error_line(await n.run_import(stack, three))
    assert wf in line and "(started)" in line and "INV-7003" in line, line
