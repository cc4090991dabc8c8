"""A deterministic, realistic night: suppliers, purchase orders, goods receipts and invoices.

The same (date, warehouse, invoices, mismatches, seed) always writes the same night, so a test or
a demo can state in advance exactly which adjustments the run must post.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date

import asyncpg

from recon.layouts import LAYOUTS, Document, DocumentLine, render, render_unreadable

_NAMES = [
    "Sharma Foods", "Gupta Traders", "Annapurna Mills", "Kaveri Agro", "Punjab Dairy",
    "Malabar Spices", "Deccan Pulses", "Himalaya Grains", "Ganga Oils", "Konkan Cashews",
    "Narmada Sugar", "Thar Salt Works", "Nilgiri Teas", "Satpura Foods", "Vindhya Flour",
    "Godavari Rice", "Brahmaputra Jute", "Aravalli Packaging", "Sahyadri Fruits", "Kutch Dates",
    "Chambal Mustard", "Yamuna Snacks", "Tapti Beverages", "Mahanadi Fisheries",
]
_GOODS = [
    "Basmati rice 5kg", "Sona masoori rice 10kg", "Atta 10kg", "Toor dal 1kg", "Moong dal 1kg",
    "Chana dal 1kg", "Mustard oil 1L", "Sunflower oil 5L", "Ghee 1L", "Sugar 5kg", "Salt 1kg",
    "Tea 500g", "Coffee 200g", "Turmeric 200g", "Chilli powder 200g", "Cumin 100g",
    "Cashews 500g", "Almonds 500g", "Dates 1kg", "Poha 1kg", "Besan 1kg", "Jaggery 1kg",
    "Biscuits carton", "Noodles carton", "Soap carton", "Detergent 4kg", "Matchboxes pack",
    "Candles pack", "Papad 200g", "Pickle 500g",
]


@dataclass(frozen=True)
class ExpectedAdjustment:
    invoice_no: str
    line_no: int
    kind: str
    supplier_id: str
    amount_paise: int


@dataclass
class SeedResult:
    business_date: str
    warehouse: str
    invoices: int
    unreadable: list[str] = field(default_factory=list)
    unknown_sku_lines: list[tuple[str, int]] = field(default_factory=list)
    no_po_invoices: list[str] = field(default_factory=list)
    adjustments: list[ExpectedAdjustment] = field(default_factory=list)


class SeedError(ValueError):
    """The night cannot be seeded as asked; the message says why in one line."""


def _compact(business_date: str) -> str:
    return business_date.replace("-", "")


def plan_night(
    business_date: str, warehouse: str, invoices: int, mismatches: int, seed: int
) -> tuple[dict, SeedResult]:
    """Decide everything in memory first; writing is a separate, all-or-nothing step."""
    try:
        date.fromisoformat(business_date)
    except ValueError:
        raise SeedError(f"--date must be YYYY-MM-DD, got {business_date!r}") from None
    if invoices < 1:
        raise SeedError("--invoices must be at least 1")
    if mismatches < 0:
        raise SeedError("--mismatches cannot be negative")
    rng = random.Random(f"{seed}:{business_date}:{warehouse}")
    day, wh = _compact(business_date), warehouse.upper()
    suppliers = [
        (f"S{n:03d}", f"{name} Pvt Ltd", f"accounts@{name.lower().replace(' ', '-')}.example")
        for n, name in enumerate(_NAMES, 1)
    ]
    catalog = [
        (f"SKU-{1000 + n}", desc, rng.randrange(2_000, 250_000, 50)) for n, desc in enumerate(_GOODS)
    ]
    result = SeedResult(business_date, warehouse, invoices)
    n_unreadable = max(1, invoices // 100) if invoices >= 20 else 0
    n_no_po = max(1, invoices // 150) if invoices >= 20 else 0
    special = rng.sample(range(invoices), n_unreadable + n_no_po)
    unreadable, no_po = set(special[:n_unreadable]), set(special[n_unreadable:])

    pos, po_lines, receipts, docs = [], [], [], []
    clean_lines: list[tuple[int, int]] = []  # (invoice index, line index) eligible for a mismatch
    plans = []
    for i in range(invoices):
        supplier = rng.choice(suppliers)
        po_number = f"PO-{wh}-{day}-{i + 1:05d}"
        invoice_no = f"INV-{day}-{wh}-{i + 1:05d}"
        goods = rng.sample(catalog, rng.randint(1, 4))
        lines = [[sku, desc, rng.randint(5, 200), price] for sku, desc, price in goods]
        plans.append([invoice_no, supplier, po_number, lines, rng.choice(LAYOUTS)])
        pos.append((po_number, supplier[0], warehouse, date.fromisoformat(business_date)))
        for sku, desc, qty, price in lines:
            po_lines.append((po_number, sku, desc, qty, price))
        if i not in unreadable and i not in no_po:
            clean_lines += [(i, j) for j in range(len(lines))]

    if mismatches > len(clean_lines):
        raise SeedError(
            f"--mismatches {mismatches} is more than the {len(clean_lines)} readable lines "
            f"of {invoices} invoices"
        )
    received = {(i, j): plans[i][3][j][2] for i, j in clean_lines}
    invoiced_price = {}
    for k, (i, j) in enumerate(sorted(rng.sample(clean_lines, mismatches))):
        invoice_no, supplier, _po, lines, _layout = plans[i]
        sku, _desc, qty, price = lines[j]
        if k % 2 == 0 and qty > 1:  # short delivery: billed for more than arrived
            short = rng.randint(1, min(qty - 1, 12))
            received[(i, j)] = qty - short
            amount, kind = short * price, "qty"
        else:  # price over the purchase order
            bump = rng.randrange(50, max(100, price // 10), 50)
            invoiced_price[(i, j)] = price + bump
            amount, kind = bump * qty, "price"
        result.adjustments.append(ExpectedAdjustment(invoice_no, j + 1, kind, supplier[0], amount))

    n_unknown = invoices // 80
    unknown_targets = rng.sample(sorted({i for i, _ in clean_lines}), min(n_unknown, invoices))
    for i, (invoice_no, supplier, po_number, lines, layout) in enumerate(plans):
        for j, (sku, _desc, qty, _price) in enumerate(lines):
            if (i, j) in received:
                receipts.append((po_number, sku, warehouse, received[(i, j)]))
            elif i in no_po:
                receipts.append((po_number, sku, warehouse, qty))
        doc_lines = [
            DocumentLine(sku, desc, qty, invoiced_price.get((i, j), price))
            for j, (sku, desc, qty, price) in enumerate(lines)
        ]
        if i in unknown_targets:
            doc_lines.append(DocumentLine(f"SKU-{9000 + i}", "Sample pack (not ordered)", 3, 9_900))
            result.unknown_sku_lines.append((invoice_no, len(doc_lines)))
        po_ref = f"PO-{wh}-{day}-X{i + 1:04d}" if i in no_po else po_number
        doc = Document(invoice_no, supplier[0], supplier[1], business_date, po_ref, doc_lines)
        if i in unreadable:
            text = render_unreadable(doc, rng)
            result.unreadable.append(invoice_no)
        else:
            text = render(doc, layout)
        if i in no_po:
            result.no_po_invoices.append(invoice_no)
        docs.append((invoice_no, supplier[0], date.fromisoformat(business_date), warehouse, text))

    stock = [(warehouse, sku, rng.randint(200, 5_000)) for sku, _d, _p in catalog]
    rows = {
        "suppliers": suppliers,
        "purchase_orders": pos,
        "po_lines": po_lines,
        "goods_receipts": receipts,
        "invoices": docs,
        "stock_levels": stock,
    }
    return rows, result


async def seed_night(
    pool: asyncpg.Pool,
    business_date: str,
    warehouse: str,
    invoices: int = 312,
    mismatches: int = 40,
    seed: int = 7,
) -> SeedResult:
    """Write one night in one transaction; refuse a night that already has invoices."""
    rows, result = plan_night(business_date, warehouse, invoices, mismatches, seed)
    day = date.fromisoformat(business_date)
    async with pool.acquire() as conn, conn.transaction():
        existing = await conn.fetchval(
            "SELECT count(*) FROM invoices WHERE business_date = $1 AND warehouse = $2",
            day,
            warehouse,
        )
        if existing:
            raise SeedError(
                f"{business_date} at {warehouse} already has {existing} invoices; "
                "seed another date or warehouse"
            )
        await conn.executemany(
            "INSERT INTO suppliers (supplier_id, name, email) VALUES ($1, $2, $3)"
            " ON CONFLICT (supplier_id) DO NOTHING",
            rows["suppliers"],
        )
        await conn.copy_records_to_table(
            "purchase_orders", records=rows["purchase_orders"],
            columns=["po_number", "supplier_id", "warehouse", "ordered_on"],
        )
        await conn.copy_records_to_table(
            "po_lines", records=rows["po_lines"],
            columns=["po_number", "sku", "description", "qty_ordered", "unit_price_paise"],
        )
        await conn.copy_records_to_table(
            "goods_receipts",
            records=[(*r, day) for r in rows["goods_receipts"]],
            columns=["po_number", "sku", "warehouse", "qty_received", "received_on"],
        )
        await conn.copy_records_to_table(
            "invoices", records=rows["invoices"],
            columns=["invoice_no", "supplier_id", "business_date", "warehouse", "document"],
        )
        await conn.executemany(
            "INSERT INTO stock_levels (warehouse, sku, qty_on_hand) VALUES ($1, $2, $3)"
            " ON CONFLICT (warehouse, sku) DO NOTHING",
            rows["stock_levels"],
        )
    return result
