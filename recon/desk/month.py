"""The desk's *suppliers and the month* page (`/month`, docs/desk.md): per supplier the month's
claims, the credit notes answering them and what is still open, and the charts a finance head
reads instead — claims by supplier per week, the over-billing rate by supplier, parked items by
reason, the model bill per night. Filters: the month, a warehouse, a supplier (a plain GET form).

Its routes are registered by `routes(desk)` in app.py; every figure comes from
recon/store/desk_month.py.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date

import asyncpg
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recon.desk import charts
from recon.domain.keys import WAREHOUSE_CODE
from recon.domain.money import amounts
from recon.mail.documents import claim_number
from recon.mail.summary import settled_claims
from recon.store import desk_month as store

_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")
TOP = 8  # suppliers named in the weekly chart; the rest are "all others"


@dataclass(frozen=True)
class SupplierLine:
    supplier_id: str
    name: str
    invoices: int
    invoices_claimed: int
    rate: float  # share of the supplier's invoices that carried a claim
    claims: int
    claimed: str  # per currency, in words
    debit_notes: int
    credit_notes: int
    credited: str
    answered: int  # claims (debit notes) a credit note answers
    still_open: str  # claimed less credited, per currency


def _per_currency(raw: object) -> dict[str, int]:
    value = json.loads(raw) if isinstance(raw, str) else raw
    return {k: int(v) for k, v in (value or {}).items()}


def _month_bounds(month: str) -> tuple[date, date]:
    start = date.fromisoformat(f"{month}-01")
    end = date(start.year + start.month // 12, start.month % 12 + 1, 1)
    return start, end


async def figures(pool: asyncpg.Pool, month: str, warehouse: str | None,
                  supplier: str | None) -> dict:
    """The page's figures. Its statements run at once, each on a connection of its own: the page
    waits for the slowest, not for their sum."""
    start, end = _month_bounds(month)
    await store.remember_nights(pool, month)
    rows, notes, weekly, parked, bill = await asyncio.gather(
        store.suppliers(pool, month, warehouse, supplier),
        store.credit_notes(pool, start, end, warehouse, supplier),
        store.claims_by_week(pool, month, warehouse, supplier),
        store.parked_by_reason(pool, month, warehouse),
        store.model_bill_by_night(pool, month, warehouse))
    ours: dict[str, set[str]] = defaultdict(set)
    if notes:
        for r in await store.claim_keys(pool, sorted({n["supplier_id"] for n in notes})):
            ours[r["supplier_id"]].add(claim_number(r["key"]))
    credited: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    note_count: dict[str, int] = defaultdict(int)
    answered: dict[str, set[str]] = defaultdict(set)
    for n in notes:
        credited[n["supplier_id"]][n["currency"]] += n["amount_paise"]
        note_count[n["supplier_id"]] += 1
        answered[n["supplier_id"]].update(settled_claims(n["cites"], ours[n["supplier_id"]])[0])
    lines = []
    for r in rows:
        claimed = _per_currency(r["claimed"])
        given = dict(credited.get(r["supplier_id"], {}))
        open_ = {c: claimed.get(c, 0) - given.get(c, 0) for c in set(claimed) | set(given)}
        lines.append(SupplierLine(
            r["supplier_id"], r["name"], r["invoices"], int(r["invoices_claimed"]),
            int(r["invoices_claimed"]) / r["invoices"] if r["invoices"] else 0.0,
            int(r["claims"]), amounts(claimed), r["debit_notes"], note_count[r["supplier_id"]],
            amounts(given), len(answered[r["supplier_id"]]), amounts(open_)))
    return {"suppliers": lines, **_charts(lines, weekly, parked, bill)}


def _charts(lines: list[SupplierLine], weekly: list[asyncpg.Record],
            parked: list[asyncpg.Record], bill: list[asyncpg.Record]) -> dict:
    names = {s.supplier_id: f"{s.name} ({s.supplier_id})" if s.name else s.supplier_id
             for s in lines}
    weeks = sorted({r["week"] for r in weekly})
    totals: dict[str, int] = defaultdict(int)
    for r in weekly:
        totals[r["supplier_id"]] += int(r["claimed"])
    top = sorted(totals, key=lambda s: -totals[s])[:TOP]
    series: dict[str, list[float]] = {names.get(s, s): [0.0] * len(weeks) for s in top}
    others = [0.0] * len(weeks)
    for r in weekly:
        at = weeks.index(r["week"])
        rupees = float(r["claimed"]) / 100
        if r["supplier_id"] in top:
            series[names.get(r["supplier_id"], r["supplier_id"])][at] += rupees
        else:
            others[at] += rupees
    if any(others):
        series["all others"] = others
    rated = sorted((s for s in lines if s.invoices), key=lambda s: -s.rate)[:15]
    return {
        "chart_weekly": charts.stacked("Claims by supplier per week (₹)",
                                       [f"week of {w:%d %b}" for w in weeks], series),
        "chart_rate": charts.bars("Over-billing rate: invoices with a claim (%)",
                                  [names[s.supplier_id] for s in rated],
                                  [round(100 * s.rate, 1) for s in rated], unit=" %"),
        "chart_parked": charts.bars("Parked items by reason", [
            f"{r['reason']} ({r['step']})" for r in parked], [r["items"] for r in parked]),
        "chart_bill": charts.grouped("The model bill per night", [f"{r['night']:%d %b}" for r in bill], {
            "model requests": [r["requests"] for r in bill],
            "read without the model": [r["local"] for r in bill]}),
        "bill_usd": sum(r["cost_usd"] for r in bill),
        "bill_requests": sum(r["requests"] for r in bill),
    }


def routes(desk) -> list[Route]:
    async def month_page(request: Request) -> Response:
        q = request.query_params
        month = q.get("month", "")[:7]
        if not _MONTH.fullmatch(month):
            month = await store.latest_month(desk.pool) or date.today().strftime("%Y-%m")
        warehouse = q.get("warehouse", "")[:32] or None
        if warehouse and not re.fullmatch(WAREHOUSE_CODE, warehouse):
            warehouse = None
        supplier = q.get("supplier", "")[:100].strip() or None
        return desk.page(request, "month.html.j2", month=month, warehouse=warehouse or "",
                         supplier=supplier or "",
                         warehouses=await store.warehouses(desk.pool, month),
                         **await figures(desk.pool, month, warehouse, supplier))

    async def stylesheet(request: Request) -> Response:
        return Response(charts.stylesheet(), media_type="text/css")

    return [Route("/month", month_page), Route("/charts.css", stylesheet)]
