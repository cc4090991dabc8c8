"""`recon import`: a folder of invoice documents becomes a night; nothing is half-imported."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg

from recon.documents.layouts import Document, DocumentLine, render
from tests.helpers import recon_cli


async def test_import_a_folder_of_documents(pool: asyncpg.Pool, stack, night, tmp_path: Path) -> None:
    day, warehouse, _queue = night
    await pool.execute("INSERT INTO suppliers VALUES ('S001', 'Sharma Foods Pvt Ltd',"
                       " 'accounts@sharma.example') ON CONFLICT DO NOTHING")
    folder = tmp_path / "inbox"
    folder.mkdir()
    for n, layout in enumerate(("table", "csv", "letter"), 1):
        invoice_no = f"IMP-{warehouse}-{n}"
        doc = Document(invoice_no, "S001", "Sharma Foods Pvt Ltd", day, "PO-NONE",
                       [DocumentLine("SKU-1001", "Basmati rice 5kg", 3, 45_000)])
        (folder / f"{invoice_no}.txt").write_text(render(doc, layout))
    (folder / f"IMP-{warehouse}-4.txt").write_text("scanned page\x00 with no supplier")
    env = stack.env()

    refused = await asyncio.to_thread(recon_cli, env, "import", str(folder), "--date", day,
                                      "--warehouse", warehouse)
    assert refused.returncode == 1 and "--supplier" in refused.stderr
    assert await pool.fetchval(
        "SELECT count(*) FROM invoices WHERE warehouse = $1", warehouse) == 0, "all or nothing"

    done = await asyncio.to_thread(recon_cli, env, "import", str(folder), "--date", day,
                                   "--warehouse", warehouse, "--supplier", "S001")
    assert done.returncode == 0, done.stderr
    assert "imported 4 invoices" in done.stdout
    stored = await pool.fetchval(
        "SELECT document FROM invoices WHERE invoice_no = $1", f"IMP-{warehouse}-4")
    assert "\x00" not in stored and "scanned page" in stored

    again = await asyncio.to_thread(recon_cli, env, "import", str(folder), "--date", day,
                                    "--warehouse", warehouse, "--supplier", "S001")
    assert again.returncode == 0 and "4 already there" in again.stdout

    missing = await asyncio.to_thread(recon_cli, env, "import", str(tmp_path / "nope"),
                                      "--date", day, "--warehouse", warehouse)
    assert missing.returncode == 1 and "not a folder" in missing.stderr
