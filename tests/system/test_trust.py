"""No one and nothing untrusted moves money (issue 22, part B), on the real stack: a lying model
parks its invoice, a 4xx or an oversized document parks one invoice while its siblings post,
offsetting adjustments hold the gate whatever the run's input says, supplier text reaches the
finance head's HTML escaped, and an unbuildable mail parks instead of retrying for ever."""

from __future__ import annotations

import asyncio
from datetime import date
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client

from recon.documents.layouts import Document, DocumentLine, render
from recon.domain.keys import invoice_ref, number_of, workflow_id_for
from recon.domain.labels import night_start_options
from recon.mail.smtp_sink import MailSink
from recon.tools.seed import seed_night
from tests.fakes.openai_server import ScriptedOpenAI
from tests.fakes.smtp import inbox, mail_database
from tests.helpers import inprocess_worker, ledger_rows, recon_cli, settings_for, start, wait_for

pytestmark = pytest.mark.slow

FINANCE_HEAD = "finance.head@distributor.example"  # the worker's default RECON_FINANCE_HEAD


async def _bill(pool: asyncpg.Pool, day: str, warehouse: str, invoice_no: str,
                lines: list[tuple[str, int, int, int, int, int]], *, supplier: str = "S001",
                layout: str = "table", po: str | None = None, pad: int = 0) -> str:
    """One invoice of our own making, with its PO and goods receipt. Each line: (sku, billed,
    billed price, ordered, PO price, received). Returns the document as stored."""
    po_number = po or f"PO-{invoice_no}"
    on = date.fromisoformat(day)
    async with pool.acquire() as conn, conn.transaction():
        if po is None:
            await conn.execute("INSERT INTO purchase_orders VALUES ($1, $2, $3, $4)",
                               po_number, supplier, warehouse, on)
            for sku, _billed, _price, ordered, po_price, received in lines:
                await conn.execute("INSERT INTO po_lines VALUES ($1, $2, 'goods', $3, $4)",
                                   po_number, sku, ordered, po_price)
                await conn.execute(
                    "INSERT INTO goods_receipts (po_number, sku, warehouse, qty_received,"
                    " received_on) VALUES ($1, $2, $3, $4, $5)",
                    po_number, sku, warehouse, received, on)
        name = await conn.fetchval("SELECT name FROM suppliers WHERE supplier_id = $1", supplier)
        document = render(Document(invoice_no, supplier, name, day, po_number, [
            DocumentLine(sku, "goods", billed, price) for sku, billed, price, *_ in lines]),
            layout) + "x" * pad
        await conn.execute(
            "INSERT INTO invoices (invoice_no, supplier_id, business_date, warehouse, document,"
            " source) VALUES ($1, $2, $3, $4, $5, 'test')", invoice_no, supplier, on, warehouse,
            document)
    return document


async def _parked(pool: asyncpg.Pool, wf: str) -> dict[str, str]:
    """By the supplier's number (the run names invoices `S001:LIE-…`)."""
    return {number_of(r["invoice_no"]): r["reason"] for r in await pool.fetch(
        "SELECT invoice_no, reason FROM parked_items WHERE workflow_id = $1", wf)}


async def test_a_lying_model_a_4xx_and_a_huge_document_each_park_one_invoice(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    day, warehouse, queue = night
    tag = warehouse.upper()
    await seed_night(pool, day, warehouse, invoices=12, mismatches=3)
    wf = workflow_id_for(day, warehouse)
    lie, refused, huge = f"LIE-{tag}", f"INV-20261013-{tag}-00004", f"BIG-{tag}"
    # The document bills 80, 40 were received: a model that reads 40 makes the night look clean.
    await _bill(pool, day, warehouse, lie, [("SKU-L1", 80, 12_50, 80, 12_50, 40)])
    await _bill(pool, day, warehouse, huge, [("SKU-L2", 5, 100_00, 5, 100_00, 5)], pad=6000)
    with ScriptedOpenAI() as fake:
        fake.always(lie, "qty=SKU-L1:40")
        fake.always(refused, "400")  # context length / content filter: about this document
        # 3 of 14 parked is above the default 10%: this worker's gate allows it.
        spawn_worker(queue, **fake.env(), RECON_MODEL_MAX_DOCUMENT_BYTES="4000",
                     RECON_GATE_MAX_PARKED_RATIO="0.5")
        handle = await start(client, settings_for(queue), day, warehouse)
        summary = await asyncio.wait_for(handle.result(), 120)
        asked = {r.invoice_no for r in fake.snapshot()}
        refused_requests = fake.requests_for(refused)

    assert summary.status == "Completed"
    parked = await _parked(pool, wf)
    assert set(parked) == {lie, refused, huge}
    # both readings, never reconciled
    assert "the model read 40 × SKU-L1 at ₹12.50 (line 1)" in parked[lie]
    assert "| 1 | SKU-L1 | goods | 80 | 12.50 |" in parked[lie]
    assert "the provider refused this document: 400" in parked[refused]
    assert len(refused_requests) == 1, "a 4xx for the document is not asked again"
    assert "document too large to send to the model" in parked[huge] and huge not in asked
    with_lines = {number_of(r["invoice_no"]) for r in await pool.fetch(
        "SELECT DISTINCT invoice_no FROM invoice_lines WHERE workflow_id = $1", wf)}
    assert not with_lines & {lie, refused, huge}
    rows = await ledger_rows(pool, wf)
    assert rows and not {number_of(r["invoice_no"]) for r in rows} & {lie, refused, huge}
    assert len(with_lines) == 11
    # the prompt never named the invoice the answer is checked against
    request = await pool.fetchval(
        "SELECT request FROM model_calls WHERE workflow_id = $1 AND invoice_no = $2", wf,
        invoice_ref("S001", lie))
    assert lie not in request.split("TAX INVOICE", 1)[0]


async def test_offsetting_adjustments_hold_the_gate_whatever_the_run_input_says(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    """+₹50,000 (billed 30 on an order of 10, received 10, at ₹2,500) and −₹50,000 (billed at
    ₹500 against a PO price of ₹1,000, 100 units) on one invoice: net ₹0, ₹1,00,000 moves. The run
    is started raw, with the old input's gate limits wide open and another address: both are
    ignored."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=1, mismatches=0)
    offset = f"OFF-{warehouse.upper()}"
    await _bill(pool, day, warehouse, offset, [("SKU-Q1", 30, 2_500_00, 10, 2_500_00, 10),
                                              ("SKU-P1", 100, 500_00, 100, 1_000_00, 100)])
    wf = workflow_id_for(day, warehouse)
    spawn_worker(queue)  # the default policy: 5%, ₹1 crore, ₹25 lakh
    await client.start_workflow(
        "NightlyReconciliation", {
            "business_date": day, "warehouse": warehouse, "heartbeat_seconds": 2.0,
            "max_parked_invoice_ratio": 1.0, "max_adjustment_share": 1.0,
            "max_adjustment_total_paise": 10**15, "finance_head_email": "thief@evil.example"},
        id=wf, task_queue=queue, **night_start_options(day, warehouse, None, "a raw start"))

    async def note() -> asyncpg.Record | None:
        return await pool.fetchrow("SELECT * FROM handovers WHERE workflow_id = $1", wf)
    held = await wait_for(note, 60, "the gate to hand over")
    assert (held["step"], held["error_type"]) == ("gate_before_debit_notes", "UnclearEvidence")
    assert "adjustments move ₹1,00,000 (net ₹0)" in held["error_message"]
    amounts = sorted(r["amount_paise"] for r in await ledger_rows(pool, wf))
    assert amounts == [-50_000_00, 50_000_00], "both posted, the net is nothing"
    recipients = {r["recipient"] for r in await pool.fetch(
        "SELECT recipient FROM outbox WHERE workflow_id = $1", wf)}
    assert recipients == {FINANCE_HEAD}, "no debit note, and the handover to the worker's address"


async def test_a_bad_gate_setting_stops_the_worker_at_start_up_in_one_line(stack) -> None:
    for name, raw in (("RECON_GATE_MAX_ADJUSTMENT_SHARE", "nan"),
                      ("RECON_GATE_MAX_PARKED_RATIO", "inf"),
                      ("RECON_GATE_MAX_ADJUSTMENT_SHARE", "1.5"),
                      ("RECON_GATE_MAX_TOTAL_PAISE", "-5")):
        done = recon_cli(stack.env(**{name: raw}), "worker", timeout=60)
        assert done.returncode != 0, name
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and name in lines[0] and "Traceback" not in done.stderr, lines


async def test_supplier_text_reaches_the_finance_head_escaped_and_a_bad_header_parks(
    stack, client: Client, night, tmp_path: Path
) -> None:
    """A PO reference with a link in it arrives in the summary's HTML as text; a supplier whose
    name carries a CR/LF gets its debit note parked with a delivery handover, not retried."""
    day, warehouse, queue = night
    hostile_po = 'PO-<a href="//evil.example/x">Approve</a>'
    async with mail_database(stack.database_url) as (url, pool):
        await seed_night(pool, day, warehouse, invoices=12, mismatches=0)
        tag = warehouse.upper()
        await pool.execute("INSERT INTO suppliers VALUES ('S-CRLF', $1, 'crlf@supplier.example')",
                           "Evil Traders\r\nBcc: everyone@evil.example")
        await _bill(pool, day, warehouse, f"LINK-{tag}", [("SKU-1001", 1, 10_00, 1, 10_00, 1)],
                    po=hostile_po)
        await _bill(pool, day, warehouse, f"CRLF-{tag}", [("SKU-C1", 9, 100_00, 4, 100_00, 4)],
                    supplier="S-CRLF", layout="csv")
        with MailSink(tmp_path / "mail") as sink:
            settings = settings_for(queue, database_url=url, smtp_url=sink.url,
                                    mail_retry_seconds=0.2, mail_poll_seconds=1.0)
            async with inprocess_worker(settings):
                handle = await start(client, settings, day, warehouse)
                assert (await asyncio.wait_for(handle.result(), 90)).status == "Completed"
                note_key = f"{handle.id}:debit-note:S-CRLF"
                parked = await wait_for(lambda: pool.fetchrow(
                    "SELECT attempts, failed_at, last_error FROM outbox WHERE key = $1"
                    " AND failed_at IS NOT NULL", note_key), 30, "the unbuildable note parked")
                await wait_for(lambda: pool.fetchval(
                    "SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'summary'"
                    " AND sent_at IS NOT NULL", handle.id), 30, "the summary delivered")
                handover = await pool.fetchrow(
                    "SELECT * FROM mail_handovers WHERE outbox_key = $1", note_key)
            messages = inbox(tmp_path / "mail")

    assert parked["attempts"] == 1 and "cannot be built" in parked["last_error"]
    assert "\n" not in parked["last_error"] and "\r" not in parked["last_error"]
    assert handover is not None
    summary = next(m for m in messages if "Reconciliation" in m["Subject"])
    html = summary.get_body(preferencelist=("html",)).get_content()
    assert f"LINK-{tag}" in html and "evil.example/x" in html
    assert '<a href="//evil.example/x">' not in html
    assert "&lt;a href=&#34;//evil.example/x&#34;&gt;Approve&lt;/a&gt;" in html
    assert not any("everyone@evil.example" in str(m["Bcc"] or "") for m in messages)


async def test_a_password_in_the_database_url_never_reaches_the_error_line(stack) -> None:
    from recon.runtime.embedded import free_port

    for url in (f"postgresql://recon@127.0.0.1:{free_port()}/recon?password=hunter2",
                f"postgresql://recon:hunter2@127.0.0.1:{free_port()}/recon?sslpassword=hunter2"):
        done = recon_cli(stack.env(DATABASE_URL=url, RECON_LOG_FORMAT="json"), "status",
                         "recon-2026-10-13-nowhere", timeout=60)
        assert done.returncode != 0
        assert "hunter2" not in done.stdout + done.stderr
        assert "127.0.0.1" in done.stderr, done.stderr
