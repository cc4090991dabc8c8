"""A deterministic, realistic night: suppliers, purchase orders, goods receipts and invoices.

The same (date, warehouse, invoices, mismatches, seed) always writes the same night, so a test or
a demo can state in advance exactly which adjustments the run must post. The draws are made in
`recon.tools.seed_plan`; this module renders the plan's documents and rows in chunks and
writes them (`recon.store.seeding`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import asyncpg

from recon.documents.layouts import LAYOUTS, Document, DocumentLine, render_unreadable
from recon.domain.keys import invoice_ref
from recon.store import seeding, supplier_ids
from recon.store.seeding import NightChunk
from recon.tools.seed_formats import SEED_FORMATS, document_in, format_of, supplier_id_rows
from recon.tools.seed_months import (
    DEFAULT_GRACE_DAYS,
    MonthPlan,
    MonthResult,
    check_month,
    month_result,
    plan_month,
    short_lines,
)
from recon.tools.seed_plan import (
    MAX_LINES,
    ExpectedAdjustment,
    NightPlan,
    SeedError,
    SeedResult,
    compact_date,
    plan_night,
)

__all__ = [
    "CHUNK_INVOICES", "ExpectedAdjustment", "NightChunk", "NightPlan", "SeedError", "SeedResult",
    "night_chunks", "plan_night", "seed_month", "seed_night", "stock_rows", "story_chunk",
]

CHUNK_INVOICES = 5_000  # invoices generated and written per COPY round, inside one transaction


def night_chunks(plan: NightPlan, size: int | None = None,
                 fmt: str = "text") -> Iterator[NightChunk]:
    """The night's rows, `size` (CHUNK_INVOICES) invoices at a time, in invoice order (the order
    the unreadable scans draw their noise from the plan's generator)."""
    size = size or CHUNK_INVOICES
    day, wh = compact_date(plan.business_date), plan.warehouse.upper()
    ordered_on = date.fromisoformat(plan.business_date)
    result, warehouse = plan.result, plan.warehouse
    chunk = NightChunk()
    for i in range(plan.invoices):
        supplier = plan.suppliers[plan.supplier_of[i]]
        po_number = f"PO-{wh}-{day}-{i + 1:05d}"
        invoice_no = f"INV-{day}-{wh}-{i + 1:05d}"
        ref = invoice_ref(supplier[0], invoice_no)  # how the run and the result name it
        base = i * MAX_LINES
        lines = [
            (*plan.catalog[plan.goods[base + j]][:2], plan.qty[base + j],
             plan.catalog[plan.goods[base + j]][2])
            for j in range(plan.lines_of[i])
        ]
        chunk.purchase_orders.append((po_number, supplier[0], warehouse, ordered_on))
        # A short delivery is an over-bill of a closed order: the PO was for what arrived, so
        # the units billed beyond it are a quantity adjustment the same night (a bill within
        # its order but ahead of its goods would be held awaiting receipt instead).
        for j, (sku, desc, ordered, price) in enumerate(lines):
            chunk.po_lines.append((po_number, sku, desc, plan.received.get(base + j, ordered),
                                   price))
        clean = i not in plan.unreadable and i not in plan.no_po
        for j, (sku, _desc, ordered, _price) in enumerate(lines):
            if clean:
                chunk.goods_receipts.append(
                    (po_number, sku, warehouse, plan.received.get(base + j, ordered), ordered_on))
            elif i in plan.no_po:
                chunk.goods_receipts.append((po_number, sku, warehouse, ordered, ordered_on))
        doc_lines = [
            DocumentLine(sku, desc, ordered, plan.invoiced_price.get(base + j, price))
            for j, (sku, desc, ordered, price) in enumerate(lines)
        ]
        if i in plan.unknown_targets:
            doc_lines.append(DocumentLine(f"SKU-{9000 + i}", "Sample pack (not ordered)", 3, 9_900))
            result.unknown_sku_lines.append((ref, len(doc_lines)))
        po_ref = f"PO-{wh}-{day}-X{i + 1:04d}" if i in plan.no_po else po_number
        doc = Document(invoice_no, supplier[0], supplier[1], plan.business_date, po_ref, doc_lines)
        scan = None
        if i in plan.unreadable:
            scan = render_unreadable(doc, plan.rng)
            result.unreadable.append(ref)
        text = document_in(format_of(fmt, i), i, doc, LAYOUTS[plan.layout_of[i]], scan)
        if i in plan.no_po:
            result.no_po_invoices.append(ref)
        chunk.invoices.append((invoice_no, supplier[0], ordered_on, warehouse, text))
        if len(chunk.invoices) >= size:
            yield chunk
            chunk = NightChunk()
    if chunk.invoices:
        yield chunk


def stock_rows(plan: NightPlan) -> list[tuple[str, str, int]]:
    """Drawn after every document, as always: call it once the chunks are written."""
    return [(plan.warehouse, sku, plan.rng.randint(200, 5_000)) for sku, _d, _p in plan.catalog]


async def seed_night(
    pool: asyncpg.Pool,
    business_date: str,
    warehouse: str,
    invoices: int = 312,
    mismatches: int = 40,
    seed: int = 7,
    fmt: str = "text",
) -> SeedResult:
    """Write one night in one transaction, streamed in chunks of CHUNK_INVOICES invoices (COPY per
    table per chunk), so memory stays bounded whatever the size; refuse a night that already has
    invoices."""
    if fmt not in SEED_FORMATS:
        raise SeedError(f"--format must be one of {', '.join(SEED_FORMATS)}, got {fmt!r}")
    plan = plan_night(business_date, warehouse, invoices, mismatches, seed)
    day = date.fromisoformat(business_date)
    async with pool.acquire() as conn, conn.transaction():
        existing = await seeding.invoices_of_night(conn, day, warehouse)
        if existing:
            raise SeedError(
                f"{business_date} at {warehouse} already has {existing} invoices; "
                "seed another date or warehouse"
            )
        await seeding.write_suppliers(conn, plan.suppliers)
        await supplier_ids.write_supplier_ids(conn, supplier_id_rows(plan.suppliers))
        for chunk in night_chunks(plan, fmt=fmt):
            await seeding.copy_night_rows(conn, chunk)
        await seeding.write_stock_levels(conn, stock_rows(plan))
    return plan.result


def story_chunk(plan: MonthPlan, fmt: str = "text") -> NightChunk:
    """The month's cross-night stories as rows: their orders, receipts (dated on their nights)
    and invoices (on their nights), in the story's own format and a layout by turn."""
    warehouse, chunk = plan.warehouse, NightChunk()
    on = [date.fromisoformat(day) for day in plan.dates]
    for order in plan.orders:
        chunk.purchase_orders.append((order.po_number, order.supplier_id, warehouse, on[order.night]))
        for sku, desc, qty, price in order.lines:
            chunk.po_lines.append((order.po_number, sku, desc, qty, price))
    for receipt in plan.receipts:
        chunk.goods_receipts.append(
            (receipt.po_number, receipt.sku, warehouse, receipt.qty, on[receipt.night]))
    for n, bill in enumerate(plan.invoices):
        lines = [DocumentLine(sku, desc, qty, price) for sku, desc, qty, price in bill.lines]
        doc = Document(bill.invoice_no, bill.supplier[0], bill.supplier[1], plan.dates[bill.night],
                       bill.po_number, lines)
        text = document_in(format_of(fmt, n), n, doc, LAYOUTS[n % len(LAYOUTS)], None)
        chunk.invoices.append((bill.invoice_no, bill.supplier[0], on[bill.night], warehouse, text))
    return chunk


async def seed_month(
    pool: asyncpg.Pool,
    first_date: str,
    warehouse: str,
    nights: int,
    invoices: int = 312,
    mismatches: int = 40,
    seed: int = 7,
    fmt: str = "text",
    grace_days: int = DEFAULT_GRACE_DAYS,
    rebill: bool = True,
) -> MonthResult:
    """Write `nights` consecutive nights in one transaction: each date's single night exactly as
    `seed_night` writes it, then the stories that cross nights (`recon.tools.seed_months`).
    Refuses when any of the nights already has invoices. The shared invoice number is planted
    only where the database keys invoices by (supplier, number)."""
    if fmt not in SEED_FORMATS:
        raise SeedError(f"--format must be one of {', '.join(SEED_FORMATS)}, got {fmt!r}")
    check_month(first_date, nights, invoices, grace_days)
    async with pool.acquire() as conn, conn.transaction():
        shared = await seeding.numbers_per_supplier(conn)
        plan = plan_month(first_date, warehouse, nights, invoices, mismatches, seed, grace_days,
                          shared_numbers=shared, rebill=rebill)
        for day in plan.dates:
            existing = await seeding.invoices_of_night(conn, date.fromisoformat(day), warehouse)
            if existing:
                raise SeedError(f"{day} at {warehouse} already has {existing} invoices; "
                                "seed other dates or another warehouse")
        await seeding.write_suppliers(conn, plan.regular[0].suppliers)
        await supplier_ids.write_supplier_ids(conn, supplier_id_rows(plan.regular[0].suppliers))
        short, ordered = short_lines(plan), {}
        for night in plan.regular:
            for chunk in night_chunks(night, fmt=fmt):
                ordered.update(((po, sku), qty) for po, sku, _d, qty, _p in chunk.po_lines
                               if (po, sku) in short)
                await seeding.copy_night_rows(conn, chunk)
            await seeding.write_stock_levels(conn, stock_rows(night))
        await seeding.copy_night_rows(conn, story_chunk(plan, fmt))
    return month_result(plan, ordered)
