"""A night with a EUR supplier and a ₹ supplier (issue 37, item 4): every amount carries its
currency end to end. The ledger entry is in the supplier's currency, the debit note says €9.44
(never "₹8"), the gate weighs each currency against its own invoiced total, the summary, `recon
status` and `recon inspect` list € and ₹ side by side (never one sum of two currencies), and the
supplier's EUR credit note is shown in €. An approver's ₹ limit never weighs euros."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client

from recon.documents.formats.reading import CREDIT_NOTE, PartyIds
from recon.tools import gst_writer, ubl_writer
from tests.approvers import signed
from tests.helpers import inprocess_worker, recon_cli, settings_for, start, wait_awaiting_decision
from tests.system.test_import_formats import Suppliers, _doc

pytestmark = pytest.mark.slow


async def _orders(pool: asyncpg.Pool, s: Suppliers, day: str, warehouse: str) -> str:
    """A's order (₹100.00 a unit) comes with the fixture; B's is €10.00 a unit (its minor unit:
    cents). Both deliver 10 units."""
    await s.create(pool, day, warehouse)
    po_b = f"PO-{warehouse.upper()}-B"
    await pool.execute("INSERT INTO purchase_orders VALUES ($1, $2, $3, $4::text::date)",
                       po_b, s.b, warehouse, day)
    await pool.execute("INSERT INTO po_lines VALUES ($1, 'SKU-1001', 'Rice', 10, 1000)", po_b)
    await pool.execute("INSERT INTO goods_receipts (po_number, sku, warehouse, qty_received,"
                       " received_on) VALUES ($1, 'SKU-1001', $2, 10, $3::text::date)",
                       po_b, warehouse, day)
    return po_b


def _documents(tmp_path: Path, s: Suppliers, day: str, warehouse: str, po_b: str) -> str:
    """The night's inbox: A's e-invoice in ₹, B's UBL invoice and credit note in €; returns the
    claim number of B's debit note."""
    folder = tmp_path / "inbox"
    folder.mkdir()
    a_ids = PartyIds(gstin=s.gstin, name="A Ltd")
    b_ids = PartyIds(vat_id=s.vat, endpoint=s.endpoint, name="B GmbH")
    # A bills ₹120.00 against ₹100.00: ₹200 over, ₹236 with its 18 % GST. B bills €10.80
    # against €10.00: €8.00 over, €9.44 with its 18 % VAT (each claim carries its tax).
    (folder / "a.json").write_text(
        gst_writer.write(_doc(f"GST/{warehouse}/1", s.a, day, s.po_a, 12_000), a_ids))
    (folder / "b.xml").write_text(ubl_writer.write(
        _doc(f"EU-{warehouse}-1", s.b, day, po_b, 1_080), b_ids, currency="EUR"))
    claim_b = f"DN-{day.replace('-', '')}-{warehouse.upper()}-{s.b}"
    # B answers our claim with a credit note of €8.00 and its 18 % tax: €9.44
    (folder / "b-credit.xml").write_text(ubl_writer.write(
        _doc(f"EU-{warehouse}-CN1", s.b, day, po_b, 80), b_ids, CREDIT_NOTE, [claim_b],
        currency="EUR"))
    return claim_b


async def test_a_night_in_euros_and_rupees_keeps_each_amount_in_its_currency(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    day, warehouse, queue = night
    s = Suppliers(warehouse)
    po_b = await _orders(pool, s, day, warehouse)
    claim_b = _documents(tmp_path, s, day, warehouse, po_b)
    folder = tmp_path / "inbox"
    env = stack.env()
    imported = await asyncio.to_thread(recon_cli, env, "import", str(folder), "--date", day,
                                       "--warehouse", warehouse)
    assert imported.returncode == 0, imported.stderr

    settings = settings_for(queue)  # the default gate: 5 % of the night's invoiced value
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await wait_awaiting_decision(handle)
        # The gate weighs each currency against its own invoiced total, each in its own words
        # (taxable value against the value invoiced before tax): never "₹208 ... of the ₹1,308
        # invoiced" (cents added to paise).
        held = await pool.fetchval("SELECT note FROM handovers WHERE workflow_id = $1",
                                   handle.id)
        assert "adjustments move ₹200, 16.7% of the ₹1,200 invoiced, above the 5% threshold" \
            in held, held
        assert "EUR adjustments move €8.00, 7.4% of the €108.00 invoiced, above the 5% " \
               "threshold" in held, held
        assert "₹208" not in held and "₹1,308" not in held, held
        assert "2 of 2 ledger entries, ₹236, €9.44 of ₹236, €9.44" in held, held
        assert f"{s.b}: 1 of 1 entries, €9.44 of €9.44" in held, held
        # An approver whose ₹ limit (₹1,000) is above the ₹236 cannot weigh the €9.44 with it: no
        # rate is assumed, so the stake is over the limit (as ₹245.44 it was within it).
        small, key = f"small-{warehouse}", tmp_path / "small.pem"
        added = await asyncio.to_thread(
            recon_cli, env, "approvers", "add", small, "--email", f"{small}@distributor.example",
            "--role", "approver", "--limit", "1000", "--key-file", str(key))
        assert added.returncode == 0, added.stderr
        over = await asyncio.to_thread(recon_cli, dict(env, RECON_APPROVER_KEY=str(key)),
                                       "approve", handle.id, "--handover", "1", "--decision",
                                       "resume")
        assert over.returncode != 0, over.stdout
        assert (f"over {small}'s limit: this resume puts ₹236, €9.44 at stake, {small} may "
                "decide up to ₹1,000") in over.stderr, over.stderr
        decision = await signed(pool, stack.state, handle.id, "resume", note="both true")
        await handle.execute_update("decide", decision)
        result = await asyncio.wait_for(handle.result(), 120)
    assert result.status == "Completed"
    assert result.adjustment_totals == {"INR": 236_00, "EUR": 9_44}
    assert result.adjustment_total_paise == 236_00, "the ₹ total, never ₹ plus cents"

    currencies = {r["supplier_id"]: (r["currency"], r["amount_paise"]) for r in await pool.fetch(
        "SELECT supplier_id, currency, amount_paise FROM ledger_entries WHERE workflow_id = $1",
        handle.id)}
    assert currencies == {s.a: ("INR", 236_00), s.b: ("EUR", 9_44)}

    notes = {r["supplier_id"]: r for r in await pool.fetch(
        "SELECT supplier_id, subject, body FROM outbox WHERE workflow_id = $1"
        " AND kind = 'debit-note'", handle.id)}
    euro = notes[s.b]["body"]
    assert notes[s.b]["subject"] == f"Debit note {claim_b}: €9.44 ({s.b} Ltd)"
    assert "We were billed €9.44 more than they support" in euro, euro
    assert "Billed €10.80 a unit, order price €10.00, on 10 units accepted: €8.00" in euro, euro
    assert "Taxable value:     €8.00" in euro and "Tax 18%:           €1.44" in euro, euro
    assert "Total of this debit note: €9.44" in euro and "₹" not in euro, euro
    assert "Total of this debit note: ₹236" in notes[s.a]["body"], notes[s.a]["body"]
    # a VAT claim is no GST debit note; A's e-invoice claim (IGST) is
    assert "CGST Act" not in euro and "the tax charged on what it claims" in euro, euro
    assert "GST debit note (CGST Act s.34)" in notes[s.a]["body"], notes[s.a]["body"]

    summary = await pool.fetchval(
        "SELECT body FROM outbox WHERE workflow_id = $1 AND kind = 'summary'", handle.id)
    html = await pool.fetchval(
        "SELECT body_html FROM outbox WHERE workflow_id = $1 AND kind = 'summary'", handle.id)
    assert "Ledger adjustments posted:  2, ₹236, €9.44" in summary, summary
    assert f"{s.a}  {s.a} Ltd: 1 entry, ₹236;" in summary, summary
    assert f"{s.b}  {s.b} Ltd: 1 entry, €9.44;" in summary, summary
    assert f"EU-{warehouse}-CN1, €9.44; answers debit note {claim_b}" in summary, summary
    assert "(EUR)" not in summary and "₹245.44" not in summary, summary
    assert "2, ₹236, €9.44" in html and "€9.44" in html and "(EUR)" not in html, html

    status = await asyncio.to_thread(recon_cli, env, "status", handle.id)
    assert status.returncode == 0, status.stderr
    assert "ledger: 2 live entries, 0 reversals, net ₹236, €9.44" in status.stdout, status.stdout
    inspected = await asyncio.to_thread(recon_cli, env, "inspect", handle.id, "--json")
    assert inspected.returncode == 0, inspected.stderr
    facts = json.loads(inspected.stdout)
    assert facts["ledger_net_by_currency"] == {"EUR": 9_44, "INR": 236_00}
    assert facts["ledger_net_paise"] == 236_00, "the ₹ net alone"
    references = await asyncio.to_thread(recon_cli, env, "inspect", handle.id, "--references")
    assert references.returncode == 0, references.stderr
    assert f"  {s.b}  €9.44  live" in references.stdout, references.stdout
    assert f"  {s.a}  ₹236  live" in references.stdout, references.stdout


async def test_an_outside_ledger_is_told_each_entrys_currency(
        pool: asyncpg.Pool, client: Client, stack, night, tmp_path: Path) -> None:
    """RECON_LEDGER=http (the key-enforcing ledger on loopback): B's entry lands as 944 EUR
    cents, A's as 23,600 INR paise; never both as INR."""
    from tests.fakes.key_ledger import KeyLedger

    day, warehouse, queue = night
    s = Suppliers(warehouse)
    po_b = await _orders(pool, s, day, warehouse)
    _documents(tmp_path, s, day, warehouse, po_b)
    imported = await asyncio.to_thread(recon_cli, stack.env(), "import", str(tmp_path / "inbox"),
                                       "--date", day, "--warehouse", warehouse)
    assert imported.returncode == 0, imported.stderr
    server = KeyLedger(token="ledger-token-123456").start()
    try:
        settings = settings_for(queue, gate_max_adjustment_share=1.0, ledger="http",
                                ledger_url=server.url, ledger_secret="ledger-token-123456")
        async with inprocess_worker(settings):
            handle = await start(client, settings, day, warehouse)
            await asyncio.wait_for(handle.result(), 120)
    finally:
        server.stop()
    told = {body["supplier"]: (body["currency"], body["amount_minor"])
            for body in server.entries.values()}
    assert told == {s.a: ("INR", 236_00), s.b: ("EUR", 9_44)}, told
