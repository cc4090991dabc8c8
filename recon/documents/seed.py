"""A deterministic, realistic night: suppliers, purchase orders, goods receipts and invoices.

The same (date, warehouse, invoices, mismatches, seed) always writes the same night, so a test or
a demo can state in advance exactly which adjustments the run must post. The draws are made in
`recon.documents.seed_plan`; this module renders the plan's documents and rows in chunks and
writes them (`recon.store.seeding`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import asyncpg

from recon.documents.layouts import LAYOUTS, Document, DocumentLine, render_unreadable
from recon.documents.seed_formats import SEED_FORMATS, document_in, format_of, supplier_id_rows
from recon.documents.seed_plan import (
    MAX_LINES,
    ExpectedAdjustment,
    NightPlan,
    SeedError,
    SeedResult,
    compact_date,
    plan_night,
)
from recon.domain.keys import invoice_ref
from recon.store import seeding, supplier_ids
from recon.store.seeding import NightChunk

__all__ = [
    "CHUNK_INVOICES", "ExpectedAdjustment", "NightChunk", "NightPlan", "SeedError", "SeedResult",
    "night_chunks", "plan_night", "seed_night", "stock_rows",
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
        for sku, desc, ordered, price in lines:
            chunk.po_lines.append((po_number, sku, desc, ordered, price))
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
