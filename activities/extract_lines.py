"""Step 2: the model reads each invoice document and returns its line items.

Paid once: an invoice that already has an extraction (or was parked) is never sent again, so a
crash anywhere costs at most the requests in flight at that moment. Every request actually sent is
one `model_calls` row with the answer word for word, committed together with its result.
"""

from __future__ import annotations

import asyncio

import asyncpg
from temporalio import activity

from activities import resources
from activities.step import business_step, report_progress
from recon import failpoints
from recon.extraction import read_answer
from recon.extraction.schema import ExtractedInvoice, UnreadableInvoice
from recon.models import Count, ExtractBatch
from recon.parking import park

STEP = "extract_lines"

_NOT_YET_EXTRACTED = """
SELECT r.seq, r.invoice_no, r.supplier_id, r.document
FROM run_invoices r
WHERE r.workflow_id = $1 AND r.seq BETWEEN $2 AND $3
  AND NOT EXISTS (SELECT 1 FROM extractions e
                  WHERE e.workflow_id = r.workflow_id AND e.invoice_no = r.invoice_no)
  AND NOT EXISTS (SELECT 1 FROM parked_items p
                  WHERE p.workflow_id = r.workflow_id AND p.item_key = 'invoice:' || r.invoice_no)
ORDER BY r.seq
"""


def _storable(text: str) -> str:
    """Postgres text cannot hold NUL: a hostile answer must not stop the step."""
    return text.replace("\x00", "\ufffd")


def _check_against_source(found: ExtractedInvoice, invoice_no: str, supplier_id: str) -> None:
    """The document must be the invoice the source says it is; otherwise nobody should post it."""
    if found.invoice_no != invoice_no:
        raise UnreadableInvoice(
            f"document says invoice {found.invoice_no!r}, the source says {invoice_no!r}"
        )
    if found.supplier_id != supplier_id:
        raise UnreadableInvoice(
            f"document says supplier {found.supplier_id!r}, the sender is {supplier_id!r}"
        )
    numbers = [line.line_no for line in found.lines]
    if len(set(numbers)) != len(numbers):
        raise UnreadableInvoice("document repeats a line number")


_RECORD = """
WITH call AS (
    INSERT INTO model_calls (workflow_id, invoice_no, extractor, model, request, response)
    VALUES ($1, $2, $3, $4, $5, $6) RETURNING id
), fresh AS (
    INSERT INTO extractions (workflow_id, invoice_no, model_call_id, po_number, line_count)
    SELECT $1, $2, id, $7, cardinality($8::int[]) FROM call
    ON CONFLICT DO NOTHING RETURNING 1
)
INSERT INTO invoice_lines (workflow_id, invoice_no, line_no, supplier_id, po_number, sku,
                           description, qty, unit_price_paise)
SELECT $1, $2, x.n, $9, $7, x.sku, x.description, x.qty, x.price
FROM unnest($8::int[], $10::text[], $11::text[], $12::int[], $13::bigint[])
     AS x(n, sku, description, qty, price)
WHERE EXISTS (SELECT 1 FROM fresh)
"""


async def _record(
    conn: asyncpg.Connection, workflow_id: str, row: asyncpg.Record, answer, name: str, model: str
) -> bool:
    """Store the call and its result atomically (one statement: a single commit per invoice).
    True if the invoice was parked. If a racing attempt stored a result first, this call is
    still recorded (it was sent and paid for) but its lines are not added again."""
    request, response = _storable(answer.request), _storable(answer.response)
    try:
        found = read_answer(answer)
        _check_against_source(found, row["invoice_no"], row["supplier_id"])
    except UnreadableInvoice as exc:
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO model_calls (workflow_id, invoice_no, extractor, model, request,"
                " response) VALUES ($1, $2, $3, $4, $5, $6)",
                workflow_id, row["invoice_no"], name, model, request, response,
            )
            await park(conn, workflow_id, STEP, row["invoice_no"], _storable(exc.reason),
                       _storable(exc.evidence or row["document"][:200]))
        return True
    lines = found.lines
    await conn.execute(
        _RECORD, workflow_id, row["invoice_no"], name, model, request, response,
        found.po_number, [ln.line_no for ln in lines], row["supplier_id"],
        [ln.sku for ln in lines], [ln.description for ln in lines],
        [ln.quantity for ln in lines], [ln.unit_price_paise for ln in lines],
    )
    return False


@activity.defn(name="extract_lines")
@business_step
async def extract_lines(batch: ExtractBatch) -> Count:
    pool = resources.pool()
    extractor = resources.extractor()
    pending = await pool.fetch(_NOT_YET_EXTRACTED, batch.workflow_id, batch.first_seq, batch.last_seq)
    gate = asyncio.Semaphore(resources.settings().extract_concurrency)
    done = {"extracted": 0, "parked": 0}

    async def one(row: asyncpg.Record) -> None:
        async with gate:
            failpoints.hit(STEP, row["seq"])
            answer = await extractor.call(row["invoice_no"], row["document"])
            async with pool.acquire() as conn:
                parked = await _record(
                    conn, batch.workflow_id, row, answer, extractor.name, extractor.model
                )
            done["parked" if parked else "extracted"] += 1
            report_progress(done["extracted"] + done["parked"])

    try:
        async with asyncio.TaskGroup() as group:
            for row in pending:
                group.create_task(one(row))
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return Count(count=done["extracted"], parked=done["parked"])
