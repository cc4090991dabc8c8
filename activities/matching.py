"""Steps 3-6: match lines to purchase orders, snapshot received stock, compare, flag mismatches.

All four are set-based SQL over the run's working set, keyed by workflow id. Each is written so
that running it again (retry, reset, resume) finds its rows there and adds nothing. Steps 3-5 run
one statement per range of invoices (recon.working_set), with the last committed range in the
heartbeat; step 6 is one statement over the run's comparisons.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import asyncpg
from temporalio import activity

from activities import resources
from activities.step import business_step, last_progress, report_progress
from recon import failpoints
from recon.models import Count, StepInput
from recon.working_set import compare_range, last_invoice_seq, match_range, snapshot_range

INVOICES_PER_RANGE = 5000  # ~12,000 lines: a statement of a second or less, then a heartbeat


async def _locked(conn: asyncpg.Connection, workflow_id: str) -> None:
    """One writer per run's working set at a time (racing attempts queue here)."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", workflow_id)


async def _fill_once(workflow_id: str, table: str, insert: str) -> Count:
    """Fill the run's rows of `table` in one transaction, unless an earlier attempt already did:
    the rows are a function of the run's saved inputs, so the first complete fill stands."""
    count = f"SELECT count(*) FROM {table} WHERE workflow_id = $1"
    async with resources.pool().acquire() as conn, conn.transaction():
        await _locked(conn, workflow_id)
        have = await conn.fetchval(count, workflow_id)
        if not have:
            await conn.execute(insert, workflow_id)
            have = await conn.fetchval(count, workflow_id)
    return Count(count=int(have))


async def _walk_invoice_ranges(
    step: str, workflow_id: str, fill: Callable[[asyncpg.Connection, int, int], Awaitable[None]]
) -> None:
    """Fill the step's rows range by range of the run's invoices, in order, each range committed
    before the next; resume after the last range the previous attempt heartbeated."""
    async with resources.pool().acquire() as conn:
        last = await last_invoice_seq(conn, workflow_id)
        position = last_progress()
        while position < last:
            upto = min(position + INVOICES_PER_RANGE, last)
            failpoints.hit_range(step, position, upto)
            await fill(conn, position, upto)
            position = upto
            report_progress(position)


@activity.defn(name="match_orders")
@business_step
async def match_orders(step: StepInput) -> Count:
    """Step 3. A line whose PO does not exist, is another supplier's, or lacks the SKU is parked;
    so is a second line billing a PO line that another line of this run already billed."""
    wf = step.workflow_id
    await _walk_invoice_ranges(
        "match_orders", wf, lambda conn, a, b: match_range(conn, wf, a, b))
    pool = resources.pool()
    matched = await pool.fetchval("SELECT count(*) FROM line_matches WHERE workflow_id = $1", wf)
    parked = await pool.fetchval(
        "SELECT count(*) FROM parked_items WHERE workflow_id = $1 AND step = 'match_orders'", wf)
    return Count(count=int(matched), parked=int(parked))


@activity.defn(name="read_stock")
@business_step
async def read_stock(step: StepInput) -> Count:
    """Step 4. Receipts keep arriving during the night; the run compares against the snapshot it
    took first, so a resume never re-reads a different picture."""
    wf = step.workflow_id
    pool = resources.pool()
    taken = await pool.fetchval("SELECT lines FROM stock_snapshot_taken WHERE workflow_id = $1", wf)
    if taken is not None:
        return Count(count=int(taken))
    await _walk_invoice_ranges(
        "read_stock", wf, lambda conn, a, b: snapshot_range(conn, wf, step.warehouse, a, b))
    lines = await pool.fetchval(
        """
        INSERT INTO stock_snapshot_taken (workflow_id, lines)
        SELECT $1, count(*) FROM stock_snapshots WHERE workflow_id = $1
        ON CONFLICT (workflow_id) DO UPDATE SET lines = stock_snapshot_taken.lines
        RETURNING lines
        """,
        wf,
    )
    return Count(count=int(lines))


@activity.defn(name="compare_quantities")
@business_step
async def compare_quantities(step: StepInput) -> Count:
    """Step 5. One comparison per matched line: invoiced vs received quantity, invoice vs PO price."""
    wf = step.workflow_id
    await _walk_invoice_ranges(
        "compare_quantities", wf, lambda conn, a, b: compare_range(conn, wf, a, b))
    count = await resources.pool().fetchval(
        "SELECT count(*) FROM comparisons WHERE workflow_id = $1", wf)
    return Count(count=int(count))


@activity.defn(name="flag_mismatches")
@business_step
async def flag_mismatches(step: StepInput) -> Count:
    """Step 6. Billed for more than arrived: a `qty` adjustment of the missing units at the
    invoice price. Billed above the PO price: a `price` adjustment on the units that arrived.
    Billed for less is flagged too, with a negative amount. Each gets its ledger key here."""
    return await _fill_once(
        step.workflow_id, "mismatches",
        """
            WITH found AS (
                SELECT invoice_no, line_no, supplier_id, 'qty' AS kind,
                       (invoiced_qty - received_qty)::bigint * invoice_price_paise AS amount,
                       'billed ' || invoiced_qty || ' x ' || sku || ', received ' || received_qty
                         AS detail
                FROM comparisons WHERE workflow_id = $1 AND invoiced_qty <> received_qty
                UNION ALL
                SELECT invoice_no, line_no, supplier_id, 'price',
                       (invoice_price_paise - po_price_paise) * least(invoiced_qty, received_qty),
                       'billed ' || invoice_price_paise || ' paise per ' || sku
                         || ', PO price ' || po_price_paise
                FROM comparisons WHERE workflow_id = $1 AND invoice_price_paise <> po_price_paise
            )
            INSERT INTO mismatches (workflow_id, seq, reference, invoice_no, line_no, supplier_id,
                                    kind, amount_paise, detail)
            SELECT $1, row_number() OVER (ORDER BY invoice_no, line_no, kind),
                   $1 || ':' || invoice_no || ':' || line_no || ':' || kind,
                   invoice_no, line_no, supplier_id, kind, amount, detail
            FROM found WHERE amount <> 0
        """,
    )
