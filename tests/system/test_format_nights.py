"""A night seeded in each format reconciles to the same claims as the text night: the seed states
its claims in advance and they do not depend on the format, and each format's run posts exactly
them, parks the same invoices and lines, and never asks a model about a structured document."""

from __future__ import annotations

import asyncpg
import pytest
from temporalio.client import Client

from recon.tools.seed import night_chunks, plan_night, seed_night
from recon.tools.seed_formats import SEED_FORMATS
from tests.helpers import inprocess_worker, ledger_rows, settings_for, start

pytestmark = pytest.mark.slow

INVOICES, MISMATCHES, SEED = 60, 8, 5
STRUCTURED = {"ubl", "gst", "cii", "facturx"}


def _claims_of_plan(day: str, warehouse: str, fmt: str) -> list[tuple]:
    plan = plan_night(day, warehouse, INVOICES, MISMATCHES, SEED)
    for _chunk in night_chunks(plan, fmt=fmt):
        pass
    return sorted((a.invoice_no, a.line_no, a.kind, a.supplier_id, a.amount_paise)
                  for a in plan.result.adjustments)


@pytest.mark.parametrize("fmt", [f for f in SEED_FORMATS if f != "text"])
async def test_a_night_in_each_format_posts_the_text_nights_claims(
    pool: asyncpg.Pool, client: Client, night, fmt: str
) -> None:
    day, warehouse, queue = night
    text_claims = _claims_of_plan(day, warehouse, "text")
    assert _claims_of_plan(day, warehouse, fmt) == text_claims, "the plan ignores the format"
    seeded = await seed_night(pool, day, warehouse, INVOICES, MISMATCHES, SEED, fmt)
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        summary = await handle.result()
    assert summary.status == "Completed"
    rows = await ledger_rows(pool, handle.id)
    # The seeded documents charge 18 % tax; a structured one states it, so its claims carry the
    # tax on their excess too (docs/books.md "Tax"): their taxable part is the text night's claim.
    posted = sorted((r["invoice_no"], r["line_no"], r["kind"], r["supplier_id"],
                     r["amount_paise"] if r["taxable_paise"] is None else r["taxable_paise"])
                    for r in rows)
    assert posted == text_claims and len(posted) == MISMATCHES
    for r in rows:
        if r["taxable_paise"] is not None:
            tax = r["amount_paise"] - r["taxable_paise"]
            assert abs(tax - r["taxable_paise"] * 18 / 100) <= 1, dict(r)
        assert (r["taxable_paise"] is not None) == (fmt in STRUCTURED) or fmt == "mixed", \
            "a structured document states its tax; text states none: its claim is as before"

    parked = {r["invoice_no"] for r in await pool.fetch(
        "SELECT invoice_no FROM parked_items WHERE workflow_id = $1 AND line_no IS NULL",
        handle.id)}
    assert set(seeded.unreadable) <= parked
    lines_parked = {(r["invoice_no"], r["line_no"]) for r in await pool.fetch(
        "SELECT invoice_no, line_no FROM parked_items WHERE workflow_id = $1"
        " AND line_no IS NOT NULL", handle.id)}
    assert set(seeded.unknown_sku_lines) <= lines_parked

    readers = dict(await pool.fetch(
        "SELECT extractor, count(*) FROM model_calls WHERE workflow_id = $1 GROUP BY 1",
        handle.id))
    if fmt in STRUCTURED:
        assert set(readers) == {"document-reader"}, readers
    if fmt == "pdf":  # text layers for the layout parser; the scans parked without it
        assert readers.get("offline-parser") == INVOICES - len(seeded.unreadable)
        assert readers.get("document-reader") == len(seeded.unreadable)


async def test_with_a_paid_model_only_text_reaches_it(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    """A mixed night with a model configured: e-invoices, UBL, CII and Factur-X are read exactly
    here and never sent; text and PDF text layers go to the model; scans are parked unsent."""
    from tests.fakes.openai_server import API_KEY, MODEL, ScriptedOpenAI

    day, warehouse, queue = night
    seeded = await seed_night(pool, day, warehouse, INVOICES, MISMATCHES, SEED, "mixed")
    documents = {r["invoice_no"]: r["document"] for r in await pool.fetch(
        "SELECT invoice_no, document FROM invoices WHERE warehouse = $1", warehouse)}
    texts = {n for n, d in documents.items() if not d.lstrip().startswith(("<", "{", "%recon"))}
    with ScriptedOpenAI() as fake:
        settings = settings_for(queue, openai_api_key=API_KEY, openai_base_url=fake.base_url,
                                model=MODEL, extract_batch_size=10)
        async with inprocess_worker(settings):
            handle = await start(client, settings, day, warehouse)
            summary = await handle.result()
        asked = {r.invoice_no for r in fake.snapshot()}
    assert summary.status == "Completed"
    assert asked == texts and 0 < len(texts) < INVOICES - len(seeded.unreadable)
    posted = sorted((r["invoice_no"], r["line_no"], r["kind"], r["supplier_id"],
                     r["amount_paise"] if r["taxable_paise"] is None else r["taxable_paise"])
                    for r in await ledger_rows(pool, handle.id))
    assert posted == _claims_of_plan(day, warehouse, "text")  # before tax, as the first test
    readers = dict(await pool.fetch(
        "SELECT extractor, count(*) FROM model_calls WHERE workflow_id = $1 GROUP BY 1",
        handle.id))
    assert readers["document-reader"] == INVOICES - len(texts)
