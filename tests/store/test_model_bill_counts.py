"""The model bill counts requests to a model only (issue 37, item 9): documents read here without
one (the document reader's structured reads, the offline layout parser) are counted apart."""

from __future__ import annotations

import uuid

import asyncpg

from recon.documents.extraction.document_reader import DocumentReader
from recon.documents.extraction.offline_extractor import OfflineExtractor
from recon.domain.model_bill import LOCAL_READERS
from recon.store.model_bill import model_bill


async def test_structured_reads_are_not_model_requests(pool: asyncpg.Pool) -> None:
    wid = f"recon-2026-10-13-bill{uuid.uuid4().hex[:6]}"
    rows = ([(f"S001:GST-{n}", "document-reader", "structured-formats-v1", None, None, None, None)
             for n in range(10)]
            + [("S001:TXT-1", "offline-parser", "layout-parser-v1", None, None, None, None)]
            + [("S001:FREE-1", "openai", "gpt-test", 1_000, 200, 0.15, 0.60)])
    await pool.executemany(
        "INSERT INTO model_calls (workflow_id, invoice_no, extractor, model, request, response,"
        " outcome, prompt_tokens, completion_tokens, price_in_usd, price_out_usd)"
        " VALUES ($1, $2, $3, $4, '', '', 'answered', $5, $6, $7, $8)",
        [(wid, *r) for r in rows])
    bill = await model_bill(pool, wid)
    assert (bill.requests, bill.answered, bill.read_without_model) == (1, 1, 11)
    line = bill.line()
    assert line.startswith("Model bill: US$0.0003 for 1 request, 1 answered, 1,200 tokens"), line
    assert line.endswith("; 11 documents read without the model"), line


def test_the_local_readers_are_the_ones_named() -> None:
    assert {DocumentReader.name, OfflineExtractor.name} == set(LOCAL_READERS)
