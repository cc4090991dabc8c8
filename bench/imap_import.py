"""How fast a mailbox source fetches and imports a night's mail, and the README's example night
taken from a mailbox, unattended.

    uv run python bench/imap_import.py [--messages 1000] [--repeats 3]

Starts its own embedded Postgres and Temporal (recon/runtime/devstack.py) and Debian's Dovecot on
loopback (recon/runtime/imap_server.py; `apt-get install dovecot-imapd`), all in a temporary
directory. Then:

1. **The example night from a mailbox**: an erp source on examples/master-data and an imap source
   holding the examples' invoices as supplier mails (`recon dev`'s mailbox, dev_mailbox.py), a
   worker in this process, one night started as the schedule starts it; prints its seconds from
   start to result (fetch, load, reconcile, post, mail) and checks the ledger the README shows.
2. **Fetch and import**: R times, a fresh mailbox of N supplier mails, each with one invoice
   attached, alternately a UBL XML (recon/tools/ubl_writer.py) and a one-page PDF with a text
   layer (recon/documents/formats/pdf_text.py, as `recon seed --format pdf` writes it), APPENDed
   (not counted); a source for a warehouse of its own; then the fetch activity's code path
   (`recon.sources.fetch.fetch_night`) is timed: reading from Dovecot, the readers, attribution,
   each message's import and its `source_items` row in one transaction. Prints messages/s per run
   and the median, and checks every message was imported once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import date
from email.message import EmailMessage
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recon.documents.formats.pdf_text import write_text_pdf  # noqa: E402
from recon.documents.formats.reading import PartyIds  # noqa: E402
from recon.documents.layouts import Document, DocumentLine, render  # noqa: E402
from recon.runtime.dev_mailbox import example_mails  # noqa: E402
from recon.runtime.devstack import embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.imap_server import DovecotServer, deliver, dovecot_path, dovecot_version  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.sources.fetch import Night, fetch_night  # noqa: E402
from recon.store import sources  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools import ubl_writer  # noqa: E402

DAY = "2026-10-13"  # the examples' night
PASSWORD_ENV = "RECON_BENCH_IMAP_PASSWORD"
SHARMA = PartyIds(gstin="03AABCS4821K1ZJ", name="Sharma Foods Pvt Ltd")  # examples/master-data


def mails(run: int, count: int) -> list[EmailMessage]:
    """`count` mails of Sharma Foods (S101), each with one invoice: UBL XML and text PDF in turn."""
    found = []
    for n in range(count):
        line = DocumentLine("SKU-1001", "Basmati Rice 5kg", 10 + n % 7, 52_000)
        doc = Document(f"BENCH-{run}-{n:05d}", "S101", SHARMA.name, DAY, "PO/LDH/26-27/0101", [line])
        msg = EmailMessage()
        msg["From"], msg["To"] = "accounts@sharma-foods.example", "ap@distributor.example"
        msg["Subject"] = f"Invoice {doc.invoice_no}"
        msg["Message-ID"] = f"<{doc.invoice_no}@sharma-foods.example>"
        msg.set_content(f"Please find invoice {doc.invoice_no} attached.\n")
        if n % 2:
            msg.add_attachment(write_text_pdf(render(doc, "table")), maintype="application", subtype="pdf",
                               filename=f"{doc.invoice_no}.pdf")
        else:
            msg.add_attachment(ubl_writer.write(doc, SHARMA).encode(), maintype="application",
                               subtype="xml", filename=f"{doc.invoice_no}.xml")
        found.append(msg)
    return found


def code_version() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


async def example_night(stack, pool, client, server: DovecotServer, password: str) -> float:
    from starter import start_night
    from worker import run_worker

    account = server.set_account("ap", password)
    await deliver(account, example_mails())
    await sources.add(pool, "ldh", "erp", f"erp:{ROOT / 'examples' / 'master-data'}", {}, None)
    await sources.add(pool, "ldh", "imap", account.url(), {}, f"env:{PASSWORD_ENV}")
    settings = replace(stack.settings(), task_queue=f"bench-imap-{uuid.uuid4().hex[:8]}",
                       openai_api_key=None, openai_base_url=None, failpoints="")
    ready, stop = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(run_worker(settings, ready=ready, stop=stop))
    try:
        await asyncio.wait_for(ready.wait(), 60)
        started = time.perf_counter()
        handle = await start_night(client, settings, DAY, "ldh")
        result = await asyncio.wait_for(handle.result(), 600)
        seconds = time.perf_counter() - started
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
    ledger = [tuple(r) for r in await pool.fetch("SELECT invoice_no, kind, amount_paise FROM ledger_entries")]
    if result.status != "Completed" or ledger != [("S103:MS-0042", "price", 60_000)]:
        raise SystemExit(f"the example night did not end as the README says: {result.status}, {ledger}")
    taken = await pool.fetchval("SELECT count(*) FROM source_items WHERE workflow_id = $1", handle.id)
    print(f"example night from a mailbox: {result.status} in {seconds:.1f} s (start to result; "
          f"{taken} items fetched: 3 ERP files, 3 mails; ledger {ledger})", flush=True)
    return seconds


async def fetch_and_import(pool, server: DovecotServer, password: str, run: int, count: int) -> float:
    account = server.set_account(f"bench{run}", password)
    started = time.perf_counter()
    await deliver(account, mails(run, count))
    print(f"  run {run}: {count:,} mails APPENDed in {time.perf_counter() - started:.1f} s (not counted)",
          flush=True)
    warehouse = f"bench{run}"
    await sources.add(pool, warehouse, "imap", account.url(), {}, f"env:{PASSWORD_ENV}")
    started = time.perf_counter()
    done = await fetch_night(pool, Night(f"recon-{DAY}-{warehouse}", date.fromisoformat(DAY), warehouse))
    seconds = time.perf_counter() - started
    invoices = await pool.fetchval("SELECT count(*) FROM invoices WHERE warehouse = $1", warehouse)
    if (done.imported, done.filed, invoices) != (count, 0, count):
        lines = await pool.fetch("SELECT reason FROM source_items WHERE outcome = 'filed' LIMIT 3")
        raise SystemExit(f"run {run}: {done.imported} imported, {done.filed} filed, {invoices} invoices "
                         f"of {count}: {[r['reason'] for r in lines]}")
    print(f"  run {run}: {count:,} messages fetched and imported in {seconds:.2f} s, "
          f"{count / seconds:,.0f} messages/s", flush=True)
    return count / seconds


async def run(args: argparse.Namespace) -> None:
    binary = dovecot_path()
    if binary is None:
        raise SystemExit("dovecot is not installed (apt-get install dovecot-imapd)")
    state = Path(tempfile.mkdtemp(prefix="recon-bench-imap-"))
    state.chmod(0o755)  # Dovecot's own user enters it
    password = uuid.uuid4().hex
    os.environ[PASSWORD_ENV] = password
    server = DovecotServer(state / "dovecot").start()
    try:
        with embedded_stack(state / "stack", port=free_port(), ui_port=free_port(),
                            persistent=False) as stack:
            pool = await connect_pool(stack.postgres.url, max_size=4)
            try:
                await migrate(pool)
                client = await connect(stack.settings())
                print(f"code {code_version()}, python {platform.python_version()}, {os.cpu_count()} CPUs, "
                      f"Dovecot {'.'.join(map(str, dovecot_version(binary)))}, "
                      f"Postgres {await pool.fetchval('SHOW server_version')}", flush=True)
                await example_night(stack, pool, client, server, password)
                rates = [await fetch_and_import(pool, server, password, r, args.messages)
                         for r in range(1, args.repeats + 1)]
                print(f"fetch and import, {args.messages:,} messages (one UBL XML or text PDF each): "
                      f"median {statistics.median(rates):,.0f} messages/s over {len(rates)} runs", flush=True)
            finally:
                await pool.close()
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
