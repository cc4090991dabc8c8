"""Invoices: the night's documents in the source (`invoices`) and the run's fixed working set
(`run_invoices`, one row per document per run, numbered by `seq`)."""

from __future__ import annotations

from datetime import date

import asyncpg

from recon.domain.keys import INVOICE_REF, PARKED_INVOICE, row_template
from recon.store.db import lock_run

# The working set names each invoice by its reference (`S001:INV-7001`, keys.INVOICE_REF): every
# row and key after step 1 carries it, so two suppliers' INV-7001 never meet. Numbered in the
# order of the supplier's number, then the supplier: a night whose numbers are all distinct is
# numbered as before references.
_COPY = """
WITH fresh AS (
    INSERT INTO run_invoices (workflow_id, invoice_no, seq, supplier_id, document)
    SELECT $1, format($4, supplier_id, invoice_no),
           row_number() OVER (ORDER BY invoice_no, supplier_id), supplier_id, document
    FROM invoices WHERE business_date = $2 AND warehouse = $3
    RETURNING invoice_no
)
INSERT INTO invoice_reads (workflow_id, invoice_no) SELECT $1, invoice_no FROM fresh
"""


async def copy_night(pool: asyncpg.Pool, workflow_id: str, business_date: date,
                     warehouse: str) -> int:
    """Fix the run's working set once: a retry or a reset finds it there and reads nothing
    again, so `invoice_reads` holds exactly one row per document per run. Returns its size."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_run(conn, workflow_id)
        have = await conn.fetchval(
            "SELECT count(*) FROM run_invoices WHERE workflow_id = $1", workflow_id
        )
        if not have:
            await conn.execute(_COPY, workflow_id, business_date, warehouse,
                               row_template(INVOICE_REF))
            have = await conn.fetchval(
                "SELECT count(*) FROM run_invoices WHERE workflow_id = $1", workflow_id
            )
    return int(have)


async def invoices_waiting(conn: asyncpg.Connection | asyncpg.Pool, business_date: date,
                           warehouse: str) -> int:
    """Invoices in the source for a night: none means there is nothing to run yet."""
    return int(await conn.fetchval(
        "SELECT count(*) FROM invoices WHERE business_date = $1 AND warehouse = $2",
        business_date, warehouse,
    ))


async def in_run(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str,
                 invoice_no: str) -> bool:
    """Is this invoice (its reference, or the number of a night posted before references) part
    of the run's working set?"""
    return bool(await conn.fetchval(
        "SELECT 1 FROM run_invoices WHERE workflow_id = $1 AND invoice_no = $2",
        workflow_id, invoice_no,
    ))


async def refs_named(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str,
                     names: list[str]) -> dict[str, list[str]]:
    """For each name a person typed: the run's invoices it names, either exactly (a reference,
    or a number of a night posted before references) or as a supplier's own number (then one
    per supplier that sent it)."""
    rows = await conn.fetch(
        "SELECT x.name, r.invoice_no FROM unnest($2::text[]) AS x(name)"
        " JOIN run_invoices r ON r.workflow_id = $1"
        "  AND (r.invoice_no = x.name OR r.invoice_no = format($3, r.supplier_id, x.name))"
        " ORDER BY x.name, r.invoice_no",
        workflow_id, names, row_template(INVOICE_REF))
    found: dict[str, list[str]] = {}
    for r in rows:
        found.setdefault(r["name"], []).append(r["invoice_no"])
    return found


# Each batch of step 2 reads its pending invoices while the night's `extractions` (and
# `parked_items`) grow by ~100,000 rows that the planner's statistics have not seen. Planned as an
# anti-join, the query hashed every extraction of the night on each read (93 ms a batch at the
# end of a 100k night; ~10 s of Postgres time over the step). `OFFSET 0` keeps each NOT EXISTS a
# per-row probe of the primary key (3-6 ms for 1,000 invoices), whatever the statistics say:
# Postgres does not turn a subquery with an OFFSET into a join (docs/design.md §8).
_NOT_YET_EXTRACTED = """
SELECT r.seq, r.invoice_no, r.supplier_id, r.document
FROM run_invoices r
WHERE r.workflow_id = $1 AND r.seq BETWEEN $2 AND $3
  AND NOT EXISTS (SELECT 1 FROM extractions e
                  WHERE e.workflow_id = r.workflow_id AND e.invoice_no = r.invoice_no OFFSET 0)
  AND NOT EXISTS (SELECT 1 FROM parked_items p
                  WHERE p.workflow_id = r.workflow_id AND p.item_key = format($4, r.invoice_no)
                  OFFSET 0)
ORDER BY r.seq
"""


async def not_yet_extracted(conn: asyncpg.Connection, workflow_id: str, first_seq: int,
                            last_seq: int) -> list[asyncpg.Record]:
    """Step 2 pays once: invoices of a batch that have no extraction and are not parked."""
    return await conn.fetch(_NOT_YET_EXTRACTED, workflow_id, first_seq, last_seq,
                            row_template(PARKED_INVOICE))


_STILL_TO_EXTRACT = """
SELECT x.invoice_no FROM unnest($2::text[]) AS x(invoice_no)
WHERE NOT EXISTS (SELECT 1 FROM extractions e WHERE e.workflow_id = $1 AND e.invoice_no = x.invoice_no)
  AND NOT EXISTS (SELECT 1 FROM parked_items p
                  WHERE p.workflow_id = $1 AND p.item_key = format($3, x.invoice_no))
"""


async def still_to_extract(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str,
                           invoice_nos: list[str]) -> set[str]:
    """Which of these invoices have, by now, neither an extraction nor a parked item: read again
    after an earlier attempt's requests in flight have landed (they may have answered some)."""
    rows = await conn.fetch(_STILL_TO_EXTRACT, workflow_id, invoice_nos,
                            row_template(PARKED_INVOICE))
    return {row["invoice_no"] for row in rows}


async def model_failures_so_far(pool: asyncpg.Pool, workflow_id: str, step: str,
                                reason_prefix: str) -> tuple[int, int]:
    """(invoices in the night, invoices parked by `step` with a reason starting with
    `reason_prefix`): the night's share of model failures so far."""
    row = await pool.fetchrow(
        "SELECT (SELECT count(*) FROM run_invoices WHERE workflow_id = $1) AS invoices,"
        " (SELECT count(*) FROM parked_items WHERE workflow_id = $1 AND step = $2"
        "   AND reason LIKE $3 || '%') AS failed",
        workflow_id, step, reason_prefix,
    )
    return int(row["invoices"]), int(row["failed"])


def label_sql(ref: str, supplier: str, after: str = "") -> str:
    """A SQL expression for how finance reads an invoice in stored evidence: `INV-7001 (S001)`,
    or `INV-7001 (S001, night of 2026-10-13)` with `after`; a number of a night posted before
    references (no supplier prefix) as it is (recon.domain.keys.invoice_label, in SQL). `ref`,
    `supplier` and `after` are SQL expressions of the statement it goes in."""
    extra = f" || ', ' || {after}" if after else ""
    return (f"(CASE WHEN left({ref}, length({supplier}) + 1) = {supplier} || ':'"
            f" THEN substr({ref}, length({supplier}) + 2) || ' (' || {supplier}{extra} || ')'"
            f" ELSE {ref}" + (f" || ' (' || {after} || ')'" if after else "") + " END)")


def night_date_sql(workflow_id: str) -> str:
    """`night of 2026-10-13` from a night's workflow id (recon.domain.keys.NIGHT), in SQL."""
    return f"regexp_replace({workflow_id}, '^recon-(\\d{{4}}-\\d{{2}}-\\d{{2}})-.*$', 'night of \\1')"
