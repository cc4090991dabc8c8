"""Recording extraction results in groups: a few statements per group of invoices, not one
transaction per invoice.

Used by both paths of step 2: the offline parser records each group of documents it read (one
`model_calls` row per invoice, inserted here), and the paid model's writer records the answers
that arrived in the last few milliseconds (their `model_calls` rows exist already: they were
written before the requests were sent, and are settled here as `answered`).

Same rules as one invoice at a time: an invoice whose extraction is already stored (a racing
attempt got there first) keeps its first lines; the call is still on record, because it was made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncpg

from recon.documents.extraction.results import STEP, storable

if TYPE_CHECKING:
    from recon.documents.extraction.results import Result


_INSERT_CALLS = """
INSERT INTO model_calls (workflow_id, invoice_no, extractor, model, request, response,
                         outcome, settled_at)
SELECT $1, x.invoice_no, $2, $3, x.request, x.response, 'answered', now()
FROM unnest($4::text[], $5::text[], $6::text[]) AS x(invoice_no, request, response)
RETURNING id, invoice_no
"""

# The lines of the extractions a statement has just inserted (its `fresh` CTE), unpacked from each
# invoice's JSON (`{lines}`: an expression over the statement's `x`). Shared by both writes below.
_LINES_OF_FRESH = """
INSERT INTO invoice_lines (workflow_id, invoice_no, line_no, supplier_id, po_number, sku,
                           description, qty, unit_price_paise, hsn, tax_category, tax_rate,
                           tax_split, taxable_paise, cgst_paise, sgst_paise, igst_paise,
                           cess_paise, unit, price_exact, cess_specific_paise)
SELECT $1, f.invoice_no, l.line_no, x.supplier_id, f.po_number, l.sku, l.description, l.quantity,
       l.unit_price_paise, l.hsn, l.tax_category, l.tax_rate, l.tax_split, l.taxable_paise,
       l.cgst_paise, l.sgst_paise, l.igst_paise, l.cess_paise, l.unit, l.price_exact,
       l.cess_specific_paise
FROM fresh f JOIN x USING (invoice_no)
CROSS JOIN LATERAL json_to_recordset({lines}->'lines')
     AS l(line_no int, sku text, description text, quantity int, unit_price_paise bigint,
          hsn text, tax_category text, tax_rate numeric, tax_split text, taxable_paise bigint,
          cgst_paise bigint, sgst_paise bigint, igst_paise bigint, cess_paise bigint,
          unit text, price_exact numeric, cess_specific_paise bigint)
"""

# A group read offline in one statement: its calls, the extractions of the readable ones, their
# lines. A reading's JSON is, in the usual case, the call's own response (the parser's answer is
# the checked invoice), so it travels once and `found` is NULL: a 100k night sent ~36 MB twice and
# paid a round trip more per group (docs/design.md §8). The extraction refers to the call inserted
# beside it; the foreign key is checked at the end of the statement, when both are there.
# Every array travels as text[] and is cast here: asyncpg knows only text[] (and oid[]) without
# asking, and asked Postgres about int[], bool[] and json[] (a recursive catalog query, 5-10 ms
# of planning) on every new connection of the pool that ran this: three a 500-invoice night.
_CALLS_EXTRACTIONS_AND_LINES = """
WITH x AS (
    SELECT invoice_no, request, response, supplier_id, po_number, line_count::int AS line_count,
           readable::bool AS readable, found::json AS found
    FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                $10::text[], $11::text[])
         AS x(invoice_no, request, response, supplier_id, po_number, line_count, readable, found)
), calls AS (
    INSERT INTO model_calls (workflow_id, invoice_no, extractor, model, request, response,
                             outcome, settled_at)
    SELECT $1, x.invoice_no, $2, $3, x.request, x.response, 'answered', now()
    FROM x
    RETURNING id, invoice_no
), fresh AS (
    INSERT INTO extractions (workflow_id, invoice_no, model_call_id, po_number, line_count)
    SELECT $1, x.invoice_no, c.id, x.po_number, x.line_count
    FROM x JOIN calls c USING (invoice_no)
    WHERE x.readable
    ON CONFLICT DO NOTHING
    RETURNING invoice_no, po_number
)
""" + _LINES_OF_FRESH.format(lines="coalesce(x.found, x.response::json)")

_SETTLE_ANSWERED = """
UPDATE model_calls m
SET outcome = 'answered', response = x.response, prompt_tokens = x.pt,
    completion_tokens = x.ct, settled_at = now(), status_code = 200
FROM unnest($1::bigint[], $2::text[], $3::int[], $4::int[]) AS x(id, response, pt, ct)
WHERE m.id = x.id
"""

# The lines travel as one JSON text per invoice (the checked `ExtractedInvoice`) and Postgres
# unpacks them: at 100k invoices that is 100k values through the driver instead of ~2 M, and the
# worker's share of the step fell by ~2.5 s of CPU (docs/design.md §8). The PO number and line
# count come as values: the worker has them, and reading them out of the JSON parsed each text
# twice more (1.4 of 9 ms a group).
_EXTRACTIONS_AND_LINES = """
WITH x AS (
    SELECT * FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::int[], $7::json[])
                  AS x(invoice_no, call_id, supplier_id, po_number, line_count, found)
), fresh AS (
    INSERT INTO extractions (workflow_id, invoice_no, model_call_id, po_number, line_count)
    SELECT $1, x.invoice_no, x.call_id, x.po_number, x.line_count
    FROM x
    ON CONFLICT DO NOTHING
    RETURNING invoice_no, po_number
)
""" + _LINES_OF_FRESH.format(lines="x.found")

PARK_MANY = """
INSERT INTO parked_items (workflow_id, item_key, step, invoice_no, reason, evidence)
SELECT $1, 'invoice:' || x.invoice_no, $2, x.invoice_no, left(x.reason, 500), left(x.evidence, 2000)
FROM unnest($3::text[], $4::text[], $5::text[]) AS x(invoice_no, reason, evidence)
ON CONFLICT (workflow_id, item_key) DO NOTHING
"""


async def write_results(
    conn: asyncpg.Connection, workflow_id: str, extractor: str, model: str, results: list[Result]
) -> None:
    """Record a group of results; the caller owns the transaction (one commit per group)."""
    if not results:
        return
    new_calls = [r for r in results if r.call_id is None]
    settled = [r for r in results if r.call_id is not None]
    if new_calls and not settled:
        # the offline readers: every result is a new call, written with its lines at once
        await _write_new_calls(conn, workflow_id, extractor, model, new_calls)
    else:
        await _write_in_parts(conn, workflow_id, extractor, model, new_calls, settled)
    unreadable = [r for r in results if r.unreadable is not None]
    if unreadable:
        await conn.execute(
            PARK_MANY, workflow_id, STEP, [r.invoice_no for r in unreadable],
            [storable(r.unreadable.reason) for r in unreadable],  # type: ignore[union-attr]
            [storable(r.unreadable.evidence) for r in unreadable],  # type: ignore[union-attr]
        )


async def _write_new_calls(conn: asyncpg.Connection, workflow_id: str, extractor: str, model: str,
                           results: list[Result]) -> None:
    responses = [storable(r.response) for r in results]
    await conn.execute(
        _CALLS_EXTRACTIONS_AND_LINES, workflow_id, extractor, model,
        [r.invoice_no for r in results], [storable(r.request) for r in results], responses,
        [r.supplier_id for r in results], [r.po_number for r in results],
        [str(r.line_count) for r in results], ["t" if r.readable else "f" for r in results],
        [None if r.lines_json == response else r.lines_json
         for r, response in zip(results, responses, strict=True)],
    )


async def _write_in_parts(conn: asyncpg.Connection, workflow_id: str, extractor: str, model: str,
                          new_calls: list[Result], settled: list[Result]) -> None:
    """The paid model's answers: their calls exist already and are settled here."""
    if new_calls:
        rows = await conn.fetch(
            _INSERT_CALLS, workflow_id, extractor, model,
            [r.invoice_no for r in new_calls], [storable(r.request) for r in new_calls],
            [storable(r.response) for r in new_calls],
        )
        ids = {row["invoice_no"]: row["id"] for row in rows}
        for r in new_calls:
            r.call_id = ids[r.invoice_no]
    if settled:
        await conn.execute(
            _SETTLE_ANSWERED, [r.call_id for r in settled],
            [storable(r.response) for r in settled],
            [r.prompt_tokens for r in settled], [r.completion_tokens for r in settled],
        )
    found = [r for r in new_calls + settled if r.readable]
    if found:
        await conn.execute(
            _EXTRACTIONS_AND_LINES, workflow_id, [r.invoice_no for r in found],
            [r.call_id for r in found], [r.supplier_id for r in found],
            [r.po_number for r in found], [r.line_count for r in found],
            [r.lines_json for r in found],
        )


async def park_unreadable(conn: asyncpg.Connection, workflow_id: str,
                          parked: list[tuple[str, str, str]]) -> None:
    """(invoice_no, reason, evidence) per invoice the paid model's attempts could not read."""
    await conn.execute(
        PARK_MANY, workflow_id, STEP, *(list(col) for col in zip(*parked, strict=True))
    )
