"""The figures the gate before debit notes weighs (docs/design.md §11): parked share and the size
of the adjustments against the night's invoiced value, night-wide and for the largest supplier.
Ledger and stock are verified by their own stores (ledger.verify_adjustments,
stock.verify_movements).

Size is the sum of ABSOLUTE adjustments: +₹50,000 and −₹50,000 on one invoice move ₹1,00,000,
not nothing. Every sum is numeric in Postgres (a sum of bigint is) and an int here, so no night
can overflow them.

Sizes are per currency (the supplier's, `suppliers.currency`): a night with a EUR supplier and ₹
suppliers weighs its EUR adjustments against its EUR invoiced total and its ₹ ones against its ₹
total, each in its own minor unit; nothing is converted and no two currencies are added."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from recon.domain.keys import invoice_label, night_of
from recon.domain.money import BASE_CURRENCY


@dataclass(frozen=True)
class CurrencyFigures:
    """The sizes of one currency's adjustments, in its minor unit."""

    currency: str
    moved: int  # sum of |open adjustments|
    net: int  # their signed sum (shown, not weighed)
    invoiced: int
    largest_supplier: str | None  # the supplier of this currency with the largest |adjustments|
    largest_supplier_moved: int


@dataclass(frozen=True)
class GateFigures:
    invoices: int
    parked: int  # whole invoices
    moved: int  # sum of |open adjustments|, paise
    net: int  # their signed sum, paise (shown, not weighed)
    invoiced: int  # paise
    largest_supplier: str | None  # the supplier with the largest sum of |adjustments|
    largest_supplier_moved: int
    # possible duplicate bills of the night: (invoice, the earlier bill it repeats, its night)
    duplicates: tuple[tuple[str, str, str], ...] = ()
    # per currency, ₹ first (the fields above are the ₹ ones); empty: a night in ₹ alone
    by_currency: tuple[CurrencyFigures, ...] = ()


# Invoices of the night (in scope, not parked whole) whose lines repeat an earlier bill of their
# supplier under another number (recon/store/weighing.py): each is held for a person. So is a
# possible duplicate held awaiting receipt on an earlier night and claimed by this one, unless a
# person let its own night's gate go on (`resume`): nobody answered, so this night asks again.
_DUPLICATES = """
WITH carried AS MATERIALIZED (
    SELECT DISTINCT m.invoice_no, m.carried_from FROM line_matches m
    WHERE m.workflow_id = $1 AND m.carried_from IS NOT NULL
      AND EXISTS (SELECT 1 FROM comparisons c WHERE c.workflow_id = $1
                  AND c.invoice_no = m.invoice_no AND c.line_no = m.line_no)
)
SELECT f.invoice_no, f.supplier_id, f.duplicate_of, f.duplicate_night
FROM invoice_fingerprints f
WHERE f.workflow_id = $1 AND f.duplicate_of IS NOT NULL
  AND ($2::text IS NULL OR f.supplier_id = $2)
  AND NOT EXISTS (SELECT 1 FROM parked_items p WHERE p.workflow_id = f.workflow_id
                  AND p.invoice_no = f.invoice_no AND p.line_no IS NULL)
UNION
SELECT f.invoice_no, f.supplier_id, f.duplicate_of, f.duplicate_night
FROM carried k
JOIN invoice_fingerprints f ON f.workflow_id = k.carried_from AND f.invoice_no = k.invoice_no
WHERE f.duplicate_of IS NOT NULL AND ($2::text IS NULL OR f.supplier_id = $2)
  AND NOT EXISTS (SELECT 1 FROM handovers h WHERE h.workflow_id = f.workflow_id
                  AND h.step = 'gate_before_debit_notes' AND h.decision = 'resume')
ORDER BY 1
LIMIT 50
"""


# The gate weighs a claim's taxable value against the taxable value invoiced (like against
# like: the invoiced total is before tax); a `tax` claim, which has no taxable value, weighs its
# tax (docs/books.md "Tax"). A claim without tax weighs its amount, as before.
_WEIGHED = "(CASE WHEN kind = 'tax' THEN amount_paise ELSE coalesce(taxable_paise, amount_paise) END)"

_FIGURES = """
SELECT (SELECT count(*) FROM run_invoices WHERE workflow_id = $1) AS invoices,
       (SELECT count(*) FROM parked_items WHERE workflow_id = $1 AND line_no IS NULL) AS parked,
       (SELECT coalesce(sum(abs(@WEIGHED@)), 0) FROM open_mismatches
         WHERE workflow_id = $1) AS moved,
       (SELECT coalesce(sum(@WEIGHED@), 0) FROM open_mismatches WHERE workflow_id = $1) AS net,
       (SELECT coalesce(sum(qty::numeric * unit_price_paise), 0) FROM invoice_lines
         WHERE workflow_id = $1) AS invoiced,
       top.supplier_id AS largest_supplier, coalesce(top.moved, 0) AS largest_supplier_moved
FROM (SELECT 1) one
LEFT JOIN (SELECT supplier_id, sum(abs(@WEIGHED@)) AS moved FROM open_mismatches
           WHERE workflow_id = $1 GROUP BY supplier_id ORDER BY 2 DESC, 1 LIMIT 1) top ON true
""".replace("@WEIGHED@", _WEIGHED)


# Each currency's sizes, weighed as above (a supplier's currency is the one its amounts are
# stored in).
_BY_CURRENCY = """
WITH moves AS (
    SELECT s.currency, m.supplier_id, sum(abs(@WEIGHED@)) AS moved, sum(@WEIGHED@) AS net
    FROM open_mismatches m JOIN suppliers s USING (supplier_id)
    WHERE m.workflow_id = $1 GROUP BY s.currency, m.supplier_id
),
billed AS (
    SELECT s.currency, sum(l.qty::numeric * l.unit_price_paise) AS invoiced
    FROM invoice_lines l JOIN suppliers s USING (supplier_id)
    WHERE l.workflow_id = $1 GROUP BY s.currency
),
top AS (
    SELECT DISTINCT ON (currency) currency, supplier_id, moved FROM moves
    ORDER BY currency, moved DESC, supplier_id
)
SELECT c.currency, coalesce(sum(m.moved), 0) AS moved, coalesce(sum(m.net), 0) AS net,
       coalesce(max(b.invoiced), 0) AS invoiced, max(t.supplier_id) AS largest_supplier,
       coalesce(max(t.moved), 0) AS largest_supplier_moved
FROM (SELECT currency FROM moves UNION SELECT currency FROM billed) c
LEFT JOIN moves m USING (currency)
LEFT JOIN billed b USING (currency)
LEFT JOIN top t USING (currency)
GROUP BY c.currency
ORDER BY c.currency <> 'INR', c.currency
""".replace("@WEIGHED@", _WEIGHED)


async def gate_figures(pool: asyncpg.Pool, workflow_id: str,
                       supplier_id: str | None = None) -> GateFigures:
    row = await pool.fetchrow(_FIGURES, workflow_id)
    duplicates = await pool.fetch(_DUPLICATES, workflow_id, supplier_id)
    by_currency = tuple(
        CurrencyFigures(r["currency"], int(r["moved"]), int(r["net"]), int(r["invoiced"]),
                        r["largest_supplier"], int(r["largest_supplier_moved"]))
        for r in await pool.fetch(_BY_CURRENCY, workflow_id))
    if all(c.currency == BASE_CURRENCY for c in by_currency):
        by_currency = ()  # a night in ₹ alone: the night-wide figures are the ₹ ones
        base = CurrencyFigures(BASE_CURRENCY, int(row["moved"]), int(row["net"]),
                               int(row["invoiced"]), row["largest_supplier"],
                               int(row["largest_supplier_moved"]))
    else:
        base = next((c for c in by_currency if c.currency == BASE_CURRENCY),
                    CurrencyFigures(BASE_CURRENCY, 0, 0, 0, None, 0))
    return GateFigures(
        invoices=int(row["invoices"]), parked=int(row["parked"]), moved=base.moved,
        net=base.net, invoiced=base.invoiced, largest_supplier=base.largest_supplier,
        largest_supplier_moved=base.largest_supplier_moved,
        # as finance reads them: `INV-7001 (S001)` and the night's date, never our references
        duplicates=tuple((invoice_label(d["invoice_no"], d["supplier_id"]),
                          invoice_label(d["duplicate_of"], d["supplier_id"]),
                          _night_date(d["duplicate_night"])) for d in duplicates),
        by_currency=by_currency,
    )


def _night_date(workflow_id: str) -> str:
    night = night_of(workflow_id)
    return night[0] if night else workflow_id
