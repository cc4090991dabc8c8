"""Nights reconciled before the cumulative match get their acceptances on the upgrade
(migration 045, `recon_backfill_acceptances`): a later night subtracts what they accepted, live
while their stock movement is, and the backfill is idempotent."""

from __future__ import annotations

import asyncpg


async def test_an_old_night_accepted_what_it_booked(pool: asyncpg.Pool) -> None:
    wf = "recon-2030-02-01-backfill"
    async with pool.acquire() as conn, conn.transaction():
        for line, (received, live) in enumerate([(40, True), (25, False)], start=1):
            await conn.execute(
                "INSERT INTO line_matches (workflow_id, invoice_no, line_no, po_number, sku,"
                " po_price_paise) VALUES ($1, 'INV-OLD-1', $2, 'PO-OLD-1', $3, 100)",
                wf, line, f"SKU-B{line}")
            await conn.execute(  # the old shape: none of the cumulative match's columns
                "INSERT INTO comparisons (workflow_id, seq, invoice_no, line_no, supplier_id, sku,"
                " invoiced_qty, received_qty, invoice_price_paise, po_price_paise)"
                " VALUES ($1, $2, 'INV-OLD-1', $2, 'S001', $3, 50, $4, 100, 100)",
                wf, line, f"SKU-B{line}", received)
            key = f"{wf}:stock:INV-OLD-1:{line}"
            await conn.execute(
                "INSERT INTO stock_movements (key, workflow_id, warehouse, sku, qty, supplier_id,"
                " invoice_no, line_no) VALUES ($1, $2, 'backfill', $3, $4, 'S001', 'INV-OLD-1', $5)",
                key, wf, f"SKU-B{line}", received, line)
            if not live:
                await conn.execute(
                    "INSERT INTO stock_movements (key, workflow_id, warehouse, sku, qty,"
                    " supplier_id, invoice_no, line_no, reverses) VALUES ($1, $2, 'backfill', $3,"
                    " $4, 'S001', 'INV-OLD-1', $5, $6)",
                    f"undo:{key}", wf, f"SKU-B{line}", -received, line, key)
    assert await pool.fetchval("SELECT recon_backfill_acceptances()") == 2
    assert await pool.fetchval("SELECT recon_backfill_acceptances()") == 0, "idempotent"
    rows = await pool.fetch(
        "SELECT line_no, warehouse, business_date::text AS day, po_number, qty_accepted, live"
        " FROM acceptances WHERE workflow_id = $1 ORDER BY line_no", wf)
    assert [tuple(r) for r in rows] == [
        (1, "backfill", "2030-02-01", "PO-OLD-1", 40, True),
        (2, "backfill", "2030-02-01", "PO-OLD-1", 25, False),  # its stock was reversed: undone
    ]
