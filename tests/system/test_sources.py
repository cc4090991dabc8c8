"""The unattended night (docs/sources.md): an ERP export folder and a drop folder configured with
`recon source add`, a real worker process, a night run through Temporal that fetches, loads and
reconciles by itself; a worker killed between reading an item and recording it leaves every
document once; a file dropped after the night's fetch is the next night's; a refused ERP file
hands over naming file:line."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path

import asyncpg
from temporalio.client import Client

from tests.approvers import register, signed
from tests.helpers import (
    ROOT,
    first_handover,
    recon_cli,
    settings_for,
    start,
    wait_awaiting_decision,
    wait_for,
)
from tests.system.test_load_cli import fresh_database

EXAMPLES = ROOT / "examples"


async def _cli(env: dict[str, str], *args: str):
    return await asyncio.to_thread(recon_cli, env, *args, timeout=120)


def _tally(text: str, warehouse: str) -> str:
    """An example export as Tally writes it: DD-MM-YYYY dates, for this test's warehouse."""
    text = text.replace(",ldh,", f",{warehouse},")
    return re.sub(r"(\d{4})-(\d{2})-(\d{2})", r"\3-\2-\1", text)


def _folders(tmp_path: Path, warehouse: str) -> tuple[Path, Path]:
    exports, drop = tmp_path / "erp-exports", tmp_path / "drop"
    exports.mkdir()
    for name in ("suppliers.csv", "orders.csv", "receipts.csv"):
        (exports / name).write_text(_tally((EXAMPLES / "master-data" / name).read_text(), warehouse))
    (exports / "README.txt").write_text("not master data: left alone\n")
    shutil.copytree(EXAMPLES / "invoices", drop)
    old = os.path.getmtime(drop)  # dropped a while ago: settled, taken at once
    for path in (*exports.iterdir(), *drop.iterdir()):
        os.utime(path, (old - 60, old - 60))
    return exports, drop


async def _add_sources(env: dict[str, str], wh: str, exports: Path, drop: Path) -> tuple[str, str]:
    erp = await _cli(env, "source", "add", wh, f"erp:{exports}", "--date-format", "DD-MM-YYYY",
                     "--amount-format", "indian")
    assert erp.returncode == 0, erp.stderr
    assert erp.stdout.startswith("source ") and "(amount-format indian, date-format DD-MM-YYYY)" in erp.stdout
    folder = await _cli(env, "source", "add", wh, f"folder:{drop}")
    assert folder.returncode == 0, folder.stderr
    return erp.stdout.split()[1], folder.stdout.split()[1]


async def test_the_night_fetches_loads_and_reconciles_by_itself_and_a_kill_takes_each_once(
        stack, client: Client, night, tmp_path: Path, spawn_worker) -> None:
    day, wh, queue = night
    exports, drop = _folders(tmp_path, wh)
    async with fresh_database(stack.database_url, f"sources_{os.getpid()}_{wh}") as (url, pool):
        env = stack.env(DATABASE_URL=url, RECON_TASK_QUEUE=queue)
        erp_id, folder_id = await _add_sources(env, wh, exports, drop)
        again = await _cli(env, "source", "add", wh, f"folder:{drop}/")
        assert again.returncode == 1 and "has the source" in again.stderr

        # A mailbox of another warehouse (this night must not need the IMAP module): its password
        # is named by where it is read, never shown, never stored.
        mail_env = {**env, "AP_PASSWORD": "never-shown-password"}
        mail = await _cli(mail_env, "source", "add", f"{wh}-mail", "imap://ap@mail.example/INBOX",
                          "--password-env", "AP_PASSWORD")
        assert mail.returncode == 0, mail.stderr
        listed = await _cli(mail_env, "source", "list")
        assert listed.returncode == 0 and "env $AP_PASSWORD" in listed.stdout
        assert "never-shown-password" not in listed.stdout
        assert "never-shown-password" not in str(await pool.fetch("SELECT * FROM sources"))
        assert sum(1 for line in listed.stdout.splitlines() if wh in line) == 3, listed.stdout
        mail_id = mail.stdout.split()[1]
        probed = await _cli(mail_env, "source", "test", mail_id)  # no IMAP module, or no network
        assert probed.returncode == 1 and len(probed.stderr.strip().splitlines()) == 1, probed.stderr
        assert "Traceback" not in probed.stderr and "never-shown-password" not in probed.stderr
        tested = await _cli(env, "source", "test", folder_id)
        assert tested.stdout.strip() == f"{drop}: 3 file(s), 3 new (a night would take them)"
        erp_test = await _cli(env, "source", "test", erp_id)
        assert "orders.csv -> recon load orders" in erp_test.stdout
        assert "README.txt -> not loaded" in erp_test.stdout
        assert await pool.fetchval("SELECT count(*) FROM suppliers") == 0, "a test imports nothing"

        # Items 1-3 are the ERP's files (suppliers, orders, receipts), 4-6 the invoices: the worker
        # dies after reading the second invoice, before recording it (the first is committed).
        doomed = spawn_worker(queue, DATABASE_URL=url, RECON_FAILPOINTS="fetch_sources:5:first")
        handle = await start(client, settings_for(queue), day, wh)
        assert await doomed.wait_exit(120) == 137
        assert await pool.fetchval("SELECT count(*) FROM source_items WHERE outcome = 'imported'") == 1
        # Dropped after the night's fetch began: the next night's, even though this night's
        # fetch runs again (its set was fixed by its mark).
        late = drop / "KA-3002.txt"
        late.write_text((drop / "KA-3001.txt").read_text().replace("KA-3001", "KA-3002"))
        os.utime(late, (os.path.getmtime(drop) - 60,) * 2)
        spawn_worker(queue, DATABASE_URL=url)
        summary = await asyncio.wait_for(handle.result(), 240)
        assert summary.status == "Completed"

        ledger = await pool.fetch("SELECT invoice_no, kind, amount_paise FROM ledger_entries")
        assert [tuple(r) for r in ledger] == [("S103:MS-0042", "price", 60_000)]
        invoices = await pool.fetch("SELECT invoice_no, business_date::text AS day FROM invoices"
                                    " WHERE warehouse = $1 ORDER BY invoice_no", wh)
        assert [(r["invoice_no"], r["day"]) for r in invoices] == [
            ("KA-3001", day), ("MS-0042", day), ("SFP-7001", day)], "each once, KA-3002 not yet"
        items = await pool.fetch("SELECT name, outcome, count(*) OVER (PARTITION BY name) AS n"
                                 " FROM source_items WHERE workflow_id = $1 ORDER BY name", handle.id)
        assert [(r["name"], r["outcome"], r["n"]) for r in items] == [
            ("KA-3001.txt", "imported", 1), ("MS-0042.txt", "imported", 1),
            ("SFP-7001.txt", "imported", 1), ("orders.csv", "loaded", 1),
            ("receipts.csv", "loaded", 1), ("suppliers.csv", "loaded", 1)]
        assert await pool.fetchval("SELECT min(ordered_on)::text FROM purchase_orders") == "2026-10-01", \
            "the DD-MM-YYYY export was read as the source declares"

        status = await _cli(env, "status", handle.id)
        assert status.returncode == 0, status.stderr
        assert f"from source {folder_id} (folder:{drop}): 3 imported (3 documents), 0 filed" in status.stdout
        assert f"from source {erp_id} (erp:{exports}): 3 file(s) loaded, 0 filed" in status.stdout

        # The next night takes the late file, and nothing the first night took.
        nxt = f"{day[:-2]}{int(day[-2:]) + 1:02d}"
        second = await start(client, settings_for(queue), nxt, wh)

        async def taken() -> asyncpg.Record | None:
            return await pool.fetchrow("SELECT workflow_id, outcome FROM source_items"
                                       " WHERE name = 'KA-3002.txt'")
        row = await wait_for(taken, 120, "the next night to take the late file")
        assert (row["workflow_id"], row["outcome"]) == (second.id, "imported")
        assert await pool.fetchval("SELECT business_date::text FROM invoices"
                                   " WHERE invoice_no = 'KA-3002'") == nxt
        assert await pool.fetchval("SELECT count(*) FROM source_items WHERE workflow_id = $1",
                                   second.id) == 1
        await second.terminate("the test has seen what it needs")


async def test_a_refused_erp_file_hands_over_naming_file_and_line(
        stack, client: Client, night, tmp_path: Path, spawn_worker) -> None:
    day, wh, queue = night
    exports, drop = _folders(tmp_path, wh)
    orders = exports / "orders.csv"
    lines = orders.read_text().splitlines()
    lines[3] = lines[3].replace(",300,", ",-3,")  # the third PO line, line 4 of the file
    orders.write_text("\n".join(lines) + "\n")
    os.utime(orders, (os.path.getmtime(drop) - 60,) * 2)
    async with fresh_database(stack.database_url, f"sources_refused_{os.getpid()}_{wh}") as (url, pool):
        env = stack.env(DATABASE_URL=url, RECON_TASK_QUEUE=queue)
        await _add_sources(env, wh, exports, drop)
        spawn_worker(queue, DATABASE_URL=url)
        handle = await start(client, settings_for(queue), day, wh)
        note = await first_handover(pool, handle.id, timeout=180)
        assert note["step"] == "fetch_sources"
        assert f'{orders}:4: qty_ordered: must be a whole number above 0, got "-3"' in note["error_message"]
        assert await pool.fetchval("SELECT count(*) FROM po_lines") == 0, "nothing of the file loaded"
        assert await pool.fetchval("SELECT count(*) FROM invoices") == 0, "no invoice taken before"
        assert await pool.fetchval("SELECT count(*) FROM suppliers") == 3, "the file before it loaded"

        # The export put right in place, and a person answers retry: the corrected file loads,
        # the refused one is on record as replaced, and the night reconciles.
        orders.write_text(orders.read_text().replace(",-3,", ",300,"))
        os.utime(orders, (os.path.getmtime(drop) - 60,) * 2)
        await register(pool, stack.state)
        await wait_awaiting_decision(handle)
        await handle.execute_update("decide", await signed(pool, stack.state, handle.id, "retry"))
        assert (await asyncio.wait_for(handle.result(), 180)).status == "Completed"
        ledger = await pool.fetch("SELECT invoice_no, kind, amount_paise FROM ledger_entries")
        assert [tuple(r) for r in ledger] == [("S103:MS-0042", "price", 60_000)]
        loads = await pool.fetch("SELECT outcome, reason FROM source_items WHERE name = 'orders.csv'"
                                 " ORDER BY id")
        assert [r["outcome"] for r in loads] == ["filed", "loaded"]
        assert loads[0]["reason"].startswith("changed before the night took it: its new content")
