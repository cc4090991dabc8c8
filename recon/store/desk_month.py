"""What the desk's *suppliers and the month* page reads (recon/desk/month.py, docs/desk.md): per
supplier the claims of the month, the credit notes the suppliers sent and the invoices they
billed; and the figures its charts draw (claims per supplier per week, parked items by reason,
the model bill per night).

A month's nights are the workflow ids `recon-YYYY-MM-DD-WAREHOUSE` (recon/domain/keys.py) in a
range (`Nights`: from "recon-YYYY-MM-" up to "recon-YYYY-MM.", '.' sorting right after '-'), so
each statement reads the month's rows by the `workflow_id` index of its table and never the year
before; a warehouse is the id's tail. What a night billed and its model bill are read from one
row per night (and supplier) that `remember_nights` writes the first time a month needs it
(migration 099 says why that is safe); everything else is read as it is now.
"""

from __future__ import annotations

import asyncpg

Db = asyncpg.Connection | asyncpg.Pool

# A night's date from its workflow id: "recon-" is 6 characters, the date the next 10; the
# warehouse follows "recon-YYYY-MM-DD-" (17 characters).
_NIGHT_DATE = "substr({col}, 7, 10)::date"
# The month's nights, at one warehouse ($3) or all: $1 <= id < $2.
_IN = ("workflow_id >= $1 AND workflow_id < $2"
       " AND ($3::text IS NULL OR substr(workflow_id, 18) = $3)")


def nights(month: str, warehouse: str | None) -> tuple[str, str, str | None]:
    """The first three parameters of every month statement: the month's range of night ids
    (month "YYYY-MM", checked by the caller) and the warehouse or None."""
    return f"recon-{month}-", f"recon-{month}.", warehouse


async def latest_month(conn: Db) -> str | None:
    """The month of the latest night that read invoices ("YYYY-MM")."""
    return await conn.fetchval(
        "SELECT substr(max(workflow_id), 7, 7) FROM run_invoices WHERE workflow_id LIKE 'recon-%'")


async def warehouses(conn: Db, month: str) -> list[str]:
    return [r["warehouse"] for r in await conn.fetch(
        "SELECT DISTINCT substr(workflow_id, 18) AS warehouse FROM lines_matched"
        f" WHERE {_IN} ORDER BY 1", *nights(month, None))]


_REMEMBER = """
WITH todo AS (
    SELECT l.workflow_id FROM lines_matched l
    WHERE l.workflow_id >= $1 AND l.workflow_id < $2
      AND NOT EXISTS (SELECT 1 FROM desk_night_bills b WHERE b.workflow_id = l.workflow_id)
), billing AS (
    INSERT INTO desk_night_billing (workflow_id, supplier_id, invoices)
    SELECT r.workflow_id, r.supplier_id, count(*) FROM run_invoices r JOIN todo USING (workflow_id)
    GROUP BY 1, 2
    ON CONFLICT DO NOTHING
)
INSERT INTO desk_night_bills (workflow_id, requests, local, cost_usd)
SELECT t.workflow_id, m.requests, m.local, m.cost_usd FROM todo t, LATERAL (
    SELECT count(*) FILTER (WHERE extractor NOT IN ('document-reader', 'offline-parser'))
               AS requests,
           count(*) FILTER (WHERE extractor IN ('document-reader', 'offline-parser')) AS local,
           coalesce(sum((coalesce(prompt_tokens, 0) * coalesce(price_in_usd, 0)
               + coalesce(completion_tokens, 0) * coalesce(price_out_usd, 0)) / 1e6), 0)::float8
               AS cost_usd
    FROM model_calls WHERE workflow_id = t.workflow_id) m
ON CONFLICT DO NOTHING
"""


async def remember_nights(conn: Db, month: str) -> int:
    """Write the sums of the month's nights that matched their lines and are not written yet;
    how many nights were. Two pages at once write each night once (ON CONFLICT)."""
    done = await conn.execute(_REMEMBER, *nights(month, None)[:2])
    return int(done.split()[-1])


_SUPPLIERS = """
WITH billed AS (
    SELECT supplier_id, sum(invoices) AS invoices FROM desk_night_billing
    WHERE {_IN} AND ($4::text IS NULL OR supplier_id = $4) GROUP BY supplier_id
), claims AS (
    SELECT supplier_id, currency, count(*) AS claims, count(DISTINCT workflow_id || invoice_no)
           AS invoices_claimed, sum(amount_paise) AS claimed
    FROM live_ledger_entries
    WHERE {_IN} AND ($4::text IS NULL OR supplier_id = $4)
    GROUP BY supplier_id, currency
), notes AS (
    SELECT supplier_id, count(*) AS debit_notes FROM live_debit_notes
    WHERE {_IN} AND ($4::text IS NULL OR supplier_id = $4) GROUP BY supplier_id
)
SELECT b.supplier_id, coalesce(s.name, '') AS name, b.invoices,
       coalesce((SELECT sum(c.invoices_claimed) FROM claims c
                 WHERE c.supplier_id = b.supplier_id), 0) AS invoices_claimed,
       coalesce((SELECT sum(c.claims) FROM claims c WHERE c.supplier_id = b.supplier_id), 0)
           AS claims,
       (SELECT coalesce(jsonb_object_agg(c.currency, c.claimed), '{}'::jsonb) FROM claims c
        WHERE c.supplier_id = b.supplier_id) AS claimed,
       coalesce(n.debit_notes, 0) AS debit_notes
FROM billed b LEFT JOIN suppliers s USING (supplier_id) LEFT JOIN notes n USING (supplier_id)
ORDER BY b.supplier_id
""".replace("{_IN}", _IN)


async def suppliers(conn: Db, month: str, warehouse: str | None,
                    supplier: str | None) -> list[asyncpg.Record]:
    """Per supplier billing in the month's nights: invoices billed, invoices claimed against,
    claims and their sums per currency (live entries only), debit notes sent."""
    return await conn.fetch(_SUPPLIERS, *nights(month, warehouse), supplier)


async def credit_notes(conn: Db, month_start: object, month_end: object, warehouse: str | None,
                       supplier: str | None) -> list[asyncpg.Record]:
    """The credit notes suppliers sent for the month's nights, with what they cite."""
    return await conn.fetch(
        "SELECT supplier_id, credit_note_no, business_date, warehouse, cites, amount_paise,"
        " currency FROM credit_notes WHERE business_date >= $1 AND business_date < $2"
        " AND ($3::text IS NULL OR warehouse = $3) AND ($4::text IS NULL OR supplier_id = $4)"
        " ORDER BY business_date, supplier_id, credit_note_no",
        month_start, month_end, warehouse, supplier)


async def claim_keys(conn: Db, suppliers: list[str]) -> list[asyncpg.Record]:
    """Keys of the debit notes we sent these suppliers (whose claim numbers a credit note cites)."""
    return await conn.fetch(
        "SELECT supplier_id, key FROM live_debit_notes WHERE supplier_id = ANY($1::text[])",
        suppliers)


async def claims_by_week(conn: Db, month: str, warehouse: str | None,
                         supplier: str | None) -> list[asyncpg.Record]:
    """₹ claimed per supplier per week (Monday) of the month's nights, live entries only."""
    return await conn.fetch(
        f"SELECT supplier_id, date_trunc('week', {_NIGHT_DATE.format(col='workflow_id')})::date"
        " AS week, sum(amount_paise) AS claimed FROM live_ledger_entries"
        f" WHERE {_IN} AND currency = 'INR'"
        " AND ($4::text IS NULL OR supplier_id = $4) GROUP BY 1, 2 ORDER BY 2, 1",
        *nights(month, warehouse), supplier)


async def parked_by_reason(conn: Db, month: str, warehouse: str | None) -> list[asyncpg.Record]:
    """Parked items per reason, a reason's own numbers and codes left out ("no purchase order
    …"), so the same reason on many invoices is one bar."""
    return await conn.fetch(
        "SELECT step, regexp_replace(reason, '\\S*[0-9]\\S*', '…', 'g') AS reason,"
        f" count(*) AS items FROM parked_items WHERE {_IN}"
        " GROUP BY 1, 2 ORDER BY 3 DESC, 2 LIMIT 12", *nights(month, warehouse))


_BILL = f"""
SELECT {_NIGHT_DATE.format(col='workflow_id')} AS night, sum(requests)::bigint AS requests,
       sum(local)::bigint AS local, sum(cost_usd)::float8 AS cost_usd
FROM desk_night_bills WHERE {_IN} GROUP BY 1 ORDER BY 1
"""


async def model_bill_by_night(conn: Db, month: str, warehouse: str | None) -> list[asyncpg.Record]:
    """Per night date: model requests, documents read without a model, and their cost in US$
    at the prices recorded on each request (of the nights `remember_nights` wrote)."""
    return await conn.fetch(_BILL, *nights(month, warehouse))


async def latest_night(conn: Db) -> str | None:
    """The latest night that matched its lines (the page bench reads it)."""
    return await conn.fetchval("SELECT max(workflow_id) FROM lines_matched")


async def on_record(conn: Db) -> tuple[int, int]:
    """(nights that matched their lines, invoices read by any night): the size a bench says."""
    row = await conn.fetchrow("SELECT (SELECT count(*) FROM lines_matched) AS nights,"
                              " (SELECT count(*) FROM run_invoices) AS invoices")
    return row["nights"], row["invoices"]
