"""Step 2: the model reads each invoice document and returns its line items.

Paid once: an invoice that already has an extraction (or was parked) is never sent again, so a
crash anywhere costs at most the requests in flight at that moment. Every request is one
`model_calls` row. With a paid model (`activities/extraction_paid.py`) the row is committed before
the request is sent and settled with its outcome; the offline parser is local and free, so its
answers are simply recorded in groups, one transaction per group of invoices, row and result
together.
"""

from __future__ import annotations

import asyncio

import asyncpg
from temporalio import activity

from activities.extraction_paid import extract_paid
from activities.resources import Room
from activities.step import business_step, report_progress
from recon.documents.extraction.document_reader import DocumentReader
from recon.documents.extraction.document_reader import owns as owns_document
from recon.documents.extraction.offline_extractor import OfflineExtractor
from recon.documents.extraction.openai_model import OpenAIExtractor
from recon.documents.extraction.results import STEP
from recon.domain.keys import extract_fence_store, fence_scope
from recon.domain.models import Count, ExtractBatch
from recon.runtime import failpoints
from recon.store.db import commit_asynchronously, make_durable
from recon.store.extractions import write_results
from recon.store.fences import Fence
from recon.store.invoices import not_yet_extracted

OFFLINE_GROUP = 1000  # invoices per transaction for the offline readers (a crash parses them again, free)
# Documents parsed between two yields to the event loop: the worker's other activities (and their
# heartbeat tickers) run in the same loop, and a 2 s heartbeat timeout leaves ~0.4 s of margin
# once the SDK's throttle (0.8 x timeout) is spent.
PARSE_SLICE = 25
# A structured document costs ~0.4 ms to read (the layouts ~0.02 ms): 25 of them held the loop
# ~10 ms per activity, ~0.2 s a round with 16 in flight, and attempts of a 20,000-invoice UBL
# night lost their heartbeats (retried up to 7 times). Three at a time keep a round near 20 ms.
DOCUMENT_SLICE = 3

async def _extract_offline(conn: asyncpg.Connection, reader: OfflineExtractor | DocumentReader,
                           workflow_id: str, pending: list[asyncpg.Record], fence: Fence,
                           done: Count | None = None) -> tuple[Count, list[asyncpg.Record]]:
    """Parse a group, record it in one transaction (a crash loses that group's work and nothing
    else: it is parsed again, for free), report progress, next group. Returns the count and the
    rows the reader handed back (documents that are text after all, for the night's extractor)."""
    done = done or Count(count=0, parked=0)
    leftover: list[asyncpg.Record] = []
    for start in range(0, len(pending), OFFLINE_GROUP):
        group = pending[start:start + OFFLINE_GROUP]
        failpoints.hit_each(STEP, [row["seq"] for row in group])  # before the group commits
        results = []
        step = DOCUMENT_SLICE if isinstance(reader, DocumentReader) else PARSE_SLICE
        for at in range(0, len(group), step):
            for row in group[at:at + step]:
                result = reader.read(row["invoice_no"], row["supplier_id"], row["document"])
                if result is None:
                    leftover.append(row)
                else:
                    results.append(result.check_against_source(row["document"]))
            await asyncio.sleep(0)
        async with conn.transaction():
            # A worker crash cannot lose a commit; only a Postgres crash can lose the last
            # fraction of a second, which the next attempt parses again.
            await commit_asynchronously(conn)
            await fence.check(conn)  # a stale attempt records nothing
            await write_results(conn, workflow_id, reader.name, reader.model, results)
        parked = sum(1 for r in results if not r.readable)
        done.count += len(results) - parked
        done.parked += parked
        report_progress(done.count + done.parked)
    return done, leftover


class ExtractionActivities(Room):
    """Step 2: the model reads the invoices, paid once."""

    @activity.defn(name="extract_lines")
    @business_step
    async def extract_lines(self, batch: ExtractBatch) -> Count:
        pool = self.pool
        extractor = self.extractor
        # Fenced like posting: an attempt Temporal has given up on (a worker frozen and woken, say)
        # learns it before it records anything or sends a request it would pay for.
        fence = await self.take_fence(
            fence_scope(batch.workflow_id, extract_fence_store(batch.first_seq, batch.last_seq)))
        # One connection for the whole batch: no pool round trip (and no RESET ALL) per invoice.
        async with pool.acquire() as conn:
            pending = await not_yet_extracted(conn, batch.workflow_id, batch.first_seq,
                                              batch.last_seq)
            # Structured documents (and known scans) are read exactly, never by a model.
            structured = [row for row in pending if owns_document(row["document"])]
            done = Count(count=0, parked=0)
            leftover: list[asyncpg.Record] = []
            if structured:
                done, leftover = await _extract_offline(conn, DocumentReader(), batch.workflow_id,
                                                        structured, fence, done)
            rest = sorted([row for row in pending if not owns_document(row["document"])]
                          + leftover, key=lambda row: row["seq"])
            if isinstance(extractor, OfflineExtractor):
                done, _ = await _extract_offline(conn, extractor, batch.workflow_id, rest, fence,
                                                 done)
            # The groups committed asynchronously: on disk before Temporal hears the batch is
            # done, or a Postgres crash in that moment loses invoices no attempt reads again.
            await make_durable(conn, fence)
            if isinstance(extractor, OfflineExtractor):
                return done
        if not rest:
            return done
        assert isinstance(extractor, OpenAIExtractor)
        paid = await extract_paid(pool, self.settings, extractor, batch.workflow_id, rest, fence)
        return Count(count=done.count + paid.count, parked=done.parked + paid.parked)
