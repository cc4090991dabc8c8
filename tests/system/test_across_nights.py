"""The books across nights (issue 21), on the real stack: a cumulative three-way match per PO line.

Each test writes its own purchase orders, dated goods receipts and invoices for a warehouse of its
own, runs consecutive nights with a real worker, and reads what the ledger and stock hold: a
partial delivery over two nights posts nothing; a delivery billed twice is caught (a quantity
adjustment beyond the order, and the gate holds the possible duplicate for a person); a receipt
dated after the night is not seen by it; a bill ahead of its goods is held, then claimed clean when
the goods come, or claimed short on the night its window closes; several lines of one night share
a PO line in order; an undo opens its quantities again; a price within the tolerance is no
adjustment.
"""

from __future__ import annotations

import asyncio
from datetime import date, timedelta

import asyncpg
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from recon.documents.layouts import Document, DocumentLine, render
from recon.domain.keys import workflow_id_for
from tests.helpers import inprocess_worker, recon_cli, settings_for, start, wait_for

pytestmark = pytest.mark.slow

PRICE = 10_000  # paise a unit on every PO line here (₹100)


def _day(first: str, n: int) -> str:
    return (date.fromisoformat(first) + timedelta(days=n)).isoformat()


async def _supplier(pool: asyncpg.Pool, supplier: str) -> None:
    await pool.execute(
        "INSERT INTO suppliers (supplier_id, name, email) VALUES ($1, $2, $3)"
        " ON CONFLICT DO NOTHING", supplier, f"Supplier {supplier}",
        f"{supplier.lower()}@suppliers.example")


async def _order(pool: asyncpg.Pool, po: str, supplier: str, warehouse: str, day: str,
                 lines: dict[str, int], price: int = PRICE) -> None:
    """A purchase order: {sku: quantity ordered}, every line at `price`."""
    await _supplier(pool, supplier)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("INSERT INTO purchase_orders VALUES ($1, $2, $3, $4)",
                           po, supplier, warehouse, date.fromisoformat(day))
        for sku, qty in lines.items():
            await conn.execute("INSERT INTO po_lines VALUES ($1, $2, 'goods', $3, $4)",
                               po, sku, qty, price)


async def _receive(pool: asyncpg.Pool, po: str, sku: str, warehouse: str, qty: int,
                   day: str) -> None:
    await pool.execute(
        "INSERT INTO goods_receipts (po_number, sku, warehouse, qty_received, received_on)"
        " VALUES ($1, $2, $3, $4, $5)", po, sku, warehouse, qty, date.fromisoformat(day))


async def _bill(pool: asyncpg.Pool, invoice_no: str, supplier: str, warehouse: str, day: str,
                po: str, lines: list[tuple[str, int]], price: int = PRICE) -> None:
    """An invoice on night `day`: lines of (sku, quantity billed), each at `price`."""
    name = await pool.fetchval("SELECT name FROM suppliers WHERE supplier_id = $1", supplier)
    document = render(Document(invoice_no, supplier, name, day, po, [
        DocumentLine(sku, "goods", qty, price) for sku, qty in lines]), "table")
    await pool.execute(
        "INSERT INTO invoices (invoice_no, supplier_id, business_date, warehouse, document,"
        " source) VALUES ($1, $2, $3, $4, $5, 'test')", invoice_no, supplier,
        date.fromisoformat(day), warehouse, document)


async def _run(client: Client, settings, day: str, warehouse: str) -> str:
    """Run one night to its end; returns its workflow id."""
    handle = await start(client, settings, day, warehouse)
    summary = await asyncio.wait_for(handle.result(), 120)
    assert summary.status == "Completed", summary
    return workflow_id_for(day, warehouse)


async def _adjustments(pool: asyncpg.Pool, wf: str) -> list[tuple[str, int, str, int]]:
    """(invoice number as the supplier wrote it, line, kind, paise) of the night's live entries."""
    rows = await pool.fetch(
        "SELECT invoice_no, line_no, kind, amount_paise FROM live_ledger_entries"
        " WHERE workflow_id = $1 ORDER BY invoice_no, line_no, kind", wf)
    return [(r["invoice_no"].rsplit(":", 1)[-1], r["line_no"], r["kind"], r["amount_paise"])
            for r in rows]


async def _booked(pool: asyncpg.Pool, wf: str) -> dict[tuple[str, int], int]:
    """{(invoice number, line): quantity} of the night's live stock movements."""
    rows = await pool.fetch(
        "SELECT invoice_no, line_no, qty FROM live_stock_movements WHERE workflow_id = $1", wf)
    return {(r["invoice_no"].rsplit(":", 1)[-1], r["line_no"]): r["qty"] for r in rows}


async def _held(pool: asyncpg.Pool, wf: str) -> list[tuple[str, int]]:
    rows = await pool.fetch(
        "SELECT invoice_no, line_no FROM held_lines WHERE workflow_id = $1 ORDER BY 1, 2", wf)
    return [(r["invoice_no"].rsplit(":", 1)[-1], r["line_no"]) for r in rows]


async def bills_ahead_of_their_goods(pool: asyncpg.Pool, day: str, wh: str) -> None:
    """Two bills of night `day` ahead of their goods: INV-1's 50 units come the next day, INV-2's
    50 never come whole (20 arrived on the night)."""
    await _order(pool, f"PO-{wh}-1", "S002", wh, day, {"SKU-H1": 50})
    await _order(pool, f"PO-{wh}-2", "S002", wh, day, {"SKU-H2": 50})
    await _receive(pool, f"PO-{wh}-2", "SKU-H2", wh, 20, day)
    await _receive(pool, f"PO-{wh}-1", "SKU-H1", wh, 50, _day(day, 1))  # the goods come next day
    await _bill(pool, f"INV-{wh}-1", "S002", wh, day, f"PO-{wh}-1", [("SKU-H1", 50)])
    await _bill(pool, f"INV-{wh}-2", "S002", wh, day, f"PO-{wh}-2", [("SKU-H2", 50)])


async def test_a_partial_delivery_over_two_nights_posts_nothing_and_books_each_unit_once(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    await _order(pool, f"PO-{wh}-1", "S001", wh, day, {"SKU-P1": 200})
    # Both receipts are on record before either night runs: each night sees what is dated on or
    # before its own business date, not what happened to be booked when it ran.
    await _receive(pool, f"PO-{wh}-1", "SKU-P1", wh, 100, day)
    await _receive(pool, f"PO-{wh}-1", "SKU-P1", wh, 100, _day(day, 1))
    await _bill(pool, f"INV-{wh}-A", "S001", wh, day, f"PO-{wh}-1", [("SKU-P1", 100)])
    await _bill(pool, f"INV-{wh}-B", "S001", wh, _day(day, 1), f"PO-{wh}-1", [("SKU-P1", 100)])
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        first = await _run(client, settings, day, wh)
        second = await _run(client, settings, _day(day, 1), wh)
    assert await _adjustments(pool, first) == []
    assert await _adjustments(pool, second) == [], "no false adjustment for the second half"
    assert await _booked(pool, first) == {(f"INV-{wh}-A", 1): 100}
    assert await _booked(pool, second) == {(f"INV-{wh}-B", 1): 100}


async def test_a_delivery_billed_twice_is_an_adjustment_and_a_possible_duplicate_at_the_gate(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    po = f"PO-{wh}-1"
    await _order(pool, po, "S001", wh, day, {"SKU-R1": 30, "SKU-R2": 10})
    await _receive(pool, po, "SKU-R1", wh, 30, day)
    await _receive(pool, po, "SKU-R2", wh, 10, day)
    lines = [("SKU-R1", 30), ("SKU-R2", 10)]
    await _bill(pool, f"INV-{wh}-1", "S001", wh, day, po, lines)
    await _bill(pool, f"INV-{wh}-9", "S001", wh, _day(day, 1), po, lines)  # sent again
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        first = await _run(client, settings, day, wh)
        handle = await start(client, settings, _day(day, 1), wh)
        second = handle.id

        async def waiting() -> bool:
            row = await pool.fetchrow("SELECT error_message FROM handovers WHERE workflow_id = $1",
                                      second)
            return row is not None

        await wait_for(waiting, 120, "the gate to hand the second night over")
        reason = await pool.fetchval(
            "SELECT error_message FROM handovers WHERE workflow_id = $1", second)
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        await handle.terminate("test over")
    assert "possible duplicate of" in reason, reason
    assert reason.index(f"INV-{wh}-9") < reason.index("possible duplicate of") < reason.index(
        f"INV-{wh}-1 ")
    assert await _adjustments(pool, first) == []
    # Already fully ordered, received and billed: every unit of the second bill is beyond the order.
    assert await _adjustments(pool, second) == [
        (f"INV-{wh}-9", 1, "qty", 30 * PRICE), (f"INV-{wh}-9", 2, "qty", 10 * PRICE)]
    detail = await pool.fetchval(
        "SELECT detail FROM mismatches WHERE workflow_id = $1 AND line_no = 1", second)
    assert f"INV-{wh}-1 (S001, night of {day})" in detail and "30 beyond the order" in detail, \
        detail
    assert sum((await _booked(pool, second)).values()) == 0, "a re-bill books no stock"


async def test_a_bill_ahead_of_its_goods_is_held_then_claimed_clean_or_short(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    await bills_ahead_of_their_goods(pool, day, wh)
    for n in (1, 2, 3):  # the other nights have a bill of their own, for another order
        await _order(pool, f"PO-{wh}-x{n}", "S003", wh, _day(day, n), {"SKU-X": 5})
        await _receive(pool, f"PO-{wh}-x{n}", "SKU-X", wh, 5, _day(day, n))
        await _bill(pool, f"INV-{wh}-x{n}", "S003", wh, _day(day, n), f"PO-{wh}-x{n}",
                    [("SKU-X", 5)])
    # RECON_RECEIPT_GRACE_DAYS: the default 3. Night 4's claim is most of its invoiced value: a
    # gate that lets a share through keeps this test about the match.
    settings = settings_for(queue, gate_max_adjustment_share=1.0)
    nights = []
    async with inprocess_worker(settings):
        for n in range(4):
            nights.append(await _run(client, settings, _day(day, n), wh))
    first, second, third, fourth = nights
    assert await _held(pool, first) == [(f"INV-{wh}-1", 1), (f"INV-{wh}-2", 1)]
    # The finance head reads them in the night's summary, and `recon status` counts them.
    summary = await pool.fetchval("SELECT body FROM outbox WHERE key = $1", f"{first}:summary")
    assert "AWAITING RECEIPT" in summary and "awaiting receipt of 30, claimed on" in summary, \
        summary
    status = await asyncio.to_thread(recon_cli, stack.env(RECON_TASK_QUEUE=queue), "status", first)
    assert "awaiting receipt: 2 lines held" in status.stdout, status.stdout + status.stderr
    assert await _adjustments(pool, first) == [] and f"INV-{wh}-1" not in str(
        await _booked(pool, first)), "nothing claimed, posted or booked for goods in transit"
    # Night 2: the goods of INV-1 arrived: claimed clean, booked under night 2's keys.
    assert await _adjustments(pool, second) == []
    assert (await _booked(pool, second))[(f"INV-{wh}-1", 1)] == 50
    assert await _held(pool, second) == [(f"INV-{wh}-2", 1)]
    assert await _held(pool, third) == [(f"INV-{wh}-2", 1)]
    # Night 4 closes INV-2's window (3 days): 20 arrived, 30 never did.
    assert await _adjustments(pool, fourth) == [(f"INV-{wh}-2", 1, "qty", 30 * PRICE)]
    assert (await _booked(pool, fourth))[(f"INV-{wh}-2", 1)] == 20
    assert await _held(pool, fourth) == []
    claims = await pool.fetchval(
        "SELECT count(*) FROM acceptances WHERE live AND invoice_no LIKE $1", f"%INV-{wh}-_")
    assert claims == 2, "each held line claimed once"


async def test_lines_of_one_night_share_a_po_line_in_order(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    po = f"PO-{wh}-1"
    await _order(pool, po, "S004", wh, day, {"SKU-S1": 100})
    await _receive(pool, po, "SKU-S1", wh, 60, day)
    await _bill(pool, f"INV-{wh}-1", "S004", wh, day, po, [("SKU-S1", 60)])
    await _bill(pool, f"INV-{wh}-2", "S004", wh, day, po, [("SKU-S1", 40)])
    # 0: claimed at once, never held; the claim is 40% of the night: let the gate pass it.
    settings = settings_for(queue, receipt_grace_days=0, gate_max_adjustment_share=1.0)
    async with inprocess_worker(settings):
        wf = await _run(client, settings, day, wh)
    assert await _held(pool, wf) == []
    # Every claimed line has its movement: the second one of what it accepted, nothing.
    assert await _booked(pool, wf) == {(f"INV-{wh}-1", 1): 60, (f"INV-{wh}-2", 1): 0}
    assert await _adjustments(pool, wf) == [(f"INV-{wh}-2", 1, "qty", 40 * PRICE)]


async def test_an_undo_opens_the_nights_quantities_again(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    po = f"PO-{wh}-1"
    await _order(pool, po, "S005", wh, day, {"SKU-U1": 40})
    await _receive(pool, po, "SKU-U1", wh, 40, day)
    await _bill(pool, f"INV-{wh}-1", "S005", wh, day, po, [("SKU-U1", 40)])
    await _bill(pool, f"INV-{wh}-2", "S005", wh, _day(day, 1), po, [("SKU-U1", 25)])
    settings = settings_for(queue)
    env = stack.env(RECON_TASK_QUEUE=queue)
    async with inprocess_worker(settings):
        first = await _run(client, settings, day, wh)
        assert await _booked(pool, first) == {(f"INV-{wh}-1", 1): 40}
        done = await asyncio.to_thread(recon_cli, env, "undo", first, "--reason",
                                       "billed in error", "--by", "asha", timeout=120)
        assert done.returncode == 0, done.stderr
        second = await _run(client, settings, _day(day, 1), wh)
    live = await pool.fetchval(
        "SELECT count(*) FROM acceptances WHERE workflow_id = $1 AND live", first)
    assert live == 0, "the undone night's acceptances are not live"
    # Night 1's 40 are open again: night 2's bill of 25 is covered.
    assert await _adjustments(pool, second) == []
    assert await _booked(pool, second) == {(f"INV-{wh}-2", 1): 25}


@pytest.mark.parametrize("billed, flagged", [(10_050, False), (10_100, False), (10_101, True)])
async def test_a_price_within_the_tolerance_is_no_adjustment(
        stack, pool: asyncpg.Pool, client: Client, night, billed: int, flagged: bool) -> None:
    day, wh, queue = night
    po = f"PO-{wh}-1"
    await _order(pool, po, "S006", wh, day, {"SKU-T1": 10})
    await _receive(pool, po, "SKU-T1", wh, 10, day)
    await _bill(pool, f"INV-{wh}-1", "S006", wh, day, po, [("SKU-T1", 10)], price=billed)
    settings = settings_for(queue, price_tolerance_paise=100)  # ₹1 a unit
    async with inprocess_worker(settings):
        wf = await _run(client, settings, day, wh)
    expected = [(f"INV-{wh}-1", 1, "price", (billed - PRICE) * 10)] if flagged else []
    assert await _adjustments(pool, wf) == expected


async def test_an_undo_of_night_one_lets_night_twos_redo_take_its_quantities(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    """Night 1 accepted a bill in error, so night 2's bill for the same goods went beyond the
    order. Undo night 1 (its quantities open again), undo night 2, and night 2's redo weighs again:
    its bill is covered now, and the redo posts no adjustment and books the goods once."""
    day, wh, queue = night
    po = f"PO-{wh}-1"
    await _order(pool, po, "S007", wh, day, {"SKU-W1": 100, "SKU-W2": 10})
    await _receive(pool, po, "SKU-W1", wh, 100, day)
    await _receive(pool, po, "SKU-W2", wh, 10, day)
    await _bill(pool, f"INV-{wh}-1", "S007", wh, day, po, [("SKU-W1", 100), ("SKU-W2", 10)])
    await _bill(pool, f"INV-{wh}-2", "S007", wh, _day(day, 1), po, [("SKU-W1", 100)])
    settings = settings_for(queue, gate_max_adjustment_share=1.0)
    env = stack.env(RECON_TASK_QUEUE=queue)

    async def cli(*args: str) -> None:
        done = await asyncio.to_thread(recon_cli, env, *args, "--by", "asha", timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr

    async with inprocess_worker(settings):
        first = await _run(client, settings, day, wh)
        second = await _run(client, settings, _day(day, 1), wh)
        assert await _adjustments(pool, second) == [(f"INV-{wh}-2", 1, "qty", 100 * PRICE)]
        await cli("undo", first, "--reason", "INV-1 was billed in error")
        await cli("undo", second, "--reason", "weigh night 2 again")
        await cli("redo", second, "--reason", "INV-1 undone")
    assert await _adjustments(pool, second) == [], "the redo found INV-2 covered"
    assert await _booked(pool, second) == {(f"INV-{wh}-2", 1): 100}
    claims = await pool.fetch(
        "SELECT workflow_id, qty_accepted FROM acceptances WHERE live AND invoice_no LIKE $1",
        f"%INV-{wh}-2")
    assert [(r["workflow_id"], r["qty_accepted"]) for r in claims] == [(second, 100)]
