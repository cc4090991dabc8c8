"""Step 2 with a paid model: every request on record before it leaves, failures kept per invoice.

For each invoice, up to `RECON_MODEL_TRIES` tries:
  1. wait for the process's pace (`RECON_MODEL_RPM` / `RECON_MODEL_TPM`);
  2. write the request's `model_calls` row (outcome `sent`) and commit it, then send it;
  3. an answer is recorded at once (`answered`, with token usage), with the extraction or, if it
     cannot be read (refusal, not JSON, outside the schema, another invoice), the invoice parked;
  4. a temporary failure (429, 5xx, timeout, connection) is recorded (`error`, status and message
     kept) and this invoice alone is asked again after a growing wait, never sooner than the
     server's Retry-After; its siblings go on meanwhile;
  5. an invoice that fails every try is parked with its errors as evidence, unless more than
     `RECON_MODEL_MAX_FAILED_SHARE` of the invoices failed: then the provider is down, nothing of
     those is parked, and the step hands over with the exact errors.
A request the provider refuses for what it holds (400 context length or content filter, 413,
422) is not asked again: the invoice is parked with the provider's words, under the same share
rule as 5. A document larger than `RECON_MODEL_MAX_DOCUMENT_BYTES` is parked without a request.
Any other error that is not temporary (wrong key, unknown model) stops the step at once; the requests
then in flight are recorded `cancelled`. A worker that dies leaves `sent` rows; the next attempt
marks them `lost` before it asks those invoices again.

Two attempts of a batch never ask the same invoice (docs/model-calls.md, issue 44): a request is
claimed under the batch's fence before it is sent, a new attempt waits for the requests an earlier
attempt that is still alive (a worker whose heartbeat came late) has in flight, and a cancelled
attempt lets its requests in flight land and records them.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

import asyncpg
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.step import report_progress
from recon.documents.extraction.answer import read_answer
from recon.documents.extraction.call_book import WRITE_WAIT_SECONDS, CallBook
from recon.documents.extraction.failures import Failure, describe
from recon.documents.extraction.openai_model import OpenAIExtractor
from recon.documents.extraction.pace import pace_for
from recon.documents.extraction.results import STEP, Result
from recon.domain.errors import StaleAttempt, UnreadableInvoice
from recon.domain.models import Count
from recon.runtime import failpoints
from recon.runtime.config import Settings
from recon.store.db import make_durable
from recon.store.fences import Fence
from recon.store.invoices import model_failures_so_far, still_to_extract
from recon.store.model_bill import in_flight, live_attempts, mark_lost

MODEL_FAILED = "model failed"  # how parked reasons of this kind begin (counted for the share)
MIN_SHARE_BASE = 20  # a batch's share is judged on at least this many invoices
LANDING_POLL_SECONDS = 0.5  # how often a new attempt looks whether an earlier one's requests landed


@dataclass
class _Tally:
    extracted: int = 0
    parked: int = 0
    failed: list[tuple[asyncpg.Record, list[Failure]]] = field(default_factory=list)
    stale: StaleAttempt | None = None  # a claim was refused: another attempt holds the batch
    stopping: bool = False  # an error that stops the step: cut the siblings' requests off

    def progress(self) -> None:
        report_progress(self.extracted + self.parked + len(self.failed))


def _wait_before_try(settings: Settings, tries_done: int, failure: Failure) -> float:
    growing = settings.model_retry_wait * 2 ** (tries_done - 1)
    return max(growing, failure.retry_after or 0.0)


async def _ask(row: asyncpg.Record, extractor: OpenAIExtractor, book: CallBook,
               gate: asyncio.Semaphore, settings: Settings, tally: _Tally) -> None:
    size = len(row["document"].encode())
    if size > settings.model_max_document_bytes:
        # Never sent (nothing to pay): a document this size is not what an invoice looks like,
        # and the provider would refuse it or bill it whole.
        await book.park(row["invoice_no"],
                        f"document too large to send to the model: {size:,} bytes, above "
                        f"RECON_MODEL_MAX_DOCUMENT_BYTES ({settings.model_max_document_bytes:,})",
                        row["document"][:200])
        tally.parked += 1
        tally.progress()
        return
    prepared = extractor.prepare(row["invoice_no"], row["document"])
    pace = pace_for(settings.model_rpm, settings.model_tpm)
    errors: list[Failure] = []
    for tries in range(1, settings.model_tries + 1):
        async with gate:
            if tally.stale is not None:
                return  # taken over: the new attempt asks what this one has not
            failpoints.hit(STEP, row["seq"])
            estimate = prepared.estimated_tokens()
            await pace.wait(estimate)
            try:
                call_id = await book.sent(row["invoice_no"], prepared.request)
            except StaleAttempt as exc:
                # Another attempt holds the batch: send nothing more, but let the siblings'
                # requests in flight land and be recorded (they are paid for, and the new
                # attempt waits for them instead of asking those invoices again).
                tally.stale = exc
                return
            request = asyncio.ensure_future(extractor.send(prepared))
            cancelled = await _land(request, tally)
            try:
                answer = request.result()
            except asyncio.CancelledError:
                book.cancelled(call_id)
                raise
            except Exception as exc:
                failure = describe(exc)
                if failure.kind not in ("rejected", "temporary"):
                    tally.stopping = True  # the step stops: siblings in flight are cancelled
                await book.failed(call_id, failure.status, failure.text())
                if cancelled:
                    raise asyncio.CancelledError from None
                if failure.kind == "rejected":  # about this document: never asked again
                    tally.failed.append((row, [failure]))
                    tally.progress()
                    return
                if failure.kind != "temporary":
                    raise
                errors.append(failure)
            else:
                used = (answer.prompt_tokens or 0) + (answer.completion_tokens or 0)
                pace.used(estimate, used if answer.prompt_tokens is not None else None)
                result = Result(row["invoice_no"], row["supplier_id"], answer.request,
                                answer.response, call_id=call_id,
                                prompt_tokens=answer.prompt_tokens,
                                completion_tokens=answer.completion_tokens)
                try:
                    result.found = read_answer(answer)
                except UnreadableInvoice as exc:
                    result.unreadable = exc
                result.check_against_source(row["document"])
                await book.answered(result)
                if cancelled:
                    raise asyncio.CancelledError
                if result.readable:
                    tally.extracted += 1
                else:
                    tally.parked += 1
                tally.progress()
                return
        if tries < settings.model_tries:
            await asyncio.sleep(_wait_before_try(settings, tries, errors[-1]))
    tally.failed.append((row, errors))
    tally.progress()


async def _land(request: asyncio.Future, tally: _Tally) -> bool:
    """Wait for a request that has left to end, and say whether this task was cancelled
    meanwhile. A request in flight is paid for whether or not anyone reads its answer, so a
    cancellation (Temporal's, e.g. a heartbeat that came late on a loaded machine) lets it land
    and be recorded, bounded by RECON_MODEL_TIMEOUT; asking that invoice again would pay twice.
    Only when the step itself stops on an error that is not temporary (a wrong key) are the
    siblings' requests cut off: they would fail the same way."""
    cancelled = False
    while not request.done():
        try:
            await asyncio.wait({request})
        except asyncio.CancelledError:
            cancelled = True
            if tally.stopping:
                request.cancel()
                with contextlib.suppress(BaseException):
                    await request
    return cancelled


def _evidence(errors: list[Failure]) -> str:
    return "\n".join(f"try {n}: {f.text()}" for n, f in enumerate(errors, 1))


async def _provider_is_down(pool: asyncpg.Pool, workflow_id: str, batch_failed: int,
                            batch_size: int, share: float) -> bool:
    """More than `share` of the invoices failed: of this batch, or of the night so far."""
    if batch_failed > share * max(batch_size, MIN_SHARE_BASE):
        return True
    invoices, failed = await model_failures_so_far(pool, workflow_id, STEP, MODEL_FAILED)
    return failed + batch_failed > share * invoices


async def extract_paid(pool: asyncpg.Pool, settings: Settings, extractor: OpenAIExtractor,
                       workflow_id: str, pending: list[asyncpg.Record],
                       fence: Fence | None = None) -> Count:
    info = activity.info()
    pending = await _after_earlier_attempts(pool, settings, workflow_id, pending)
    assert settings.database_url is not None
    book = await CallBook.open(
        settings.database_url, workflow_id, extractor.name, extractor.model,
        settings.model_price_in, settings.model_price_out,
        f"{info.workflow_run_id}/{info.activity_id}#{info.attempt}", fence,
    )
    gate = asyncio.Semaphore(settings.extract_concurrency)
    tally = _Tally()
    try:
        try:
            async with asyncio.TaskGroup() as group:
                for row in pending:
                    group.create_task(_ask(row, extractor, book, gate, settings, tally))
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
        if tally.stale is not None:
            raise tally.stale  # what it had in flight is recorded; the rest is the new attempt's
        if tally.failed:
            await _settle_failures(pool, book, settings, workflow_id, len(pending), tally)
    finally:
        await book.close()
    if fence is not None:
        # The book commits without waiting for the disk: its answers are on disk before Temporal
        # hears the batch is done, or a Postgres crash in that moment loses paid answers that no
        # attempt asks for again (recon/store/db.py make_durable).
        async with pool.acquire() as conn:
            await make_durable(conn, fence)
    return Count(count=tally.extracted, parked=tally.parked)


async def _after_earlier_attempts(pool: asyncpg.Pool, settings: Settings, workflow_id: str,
                                  pending: list[asyncpg.Record]) -> list[asyncpg.Record]:
    """Before asking anything: requests an earlier attempt still has in flight are waited for,
    not asked again. That attempt may be alive (its worker slow, its heartbeat late, so Temporal
    started this one): its book's connection still holds the attempt's lock, and its requests
    land within RECON_MODEL_TIMEOUT, answered or failed. A request of an attempt whose connection
    is gone (worker killed), or older than the timeout and the book's write wait (a worker frozen
    for good), is `lost`: that invoice is asked again, the one cost a kill cannot avoid. Then the
    invoices the earlier attempt answered meanwhile are dropped."""
    invoices = [row["invoice_no"] for row in pending]
    patience = settings.model_timeout + WRITE_WAIT_SECONDS
    while True:
        rows = await in_flight(pool, workflow_id, invoices)
        if not rows:
            break
        alive = await live_attempts(pool, sorted({r["attempt"] for r in rows if r["attempt"]}))
        if not any(r["attempt"] in alive and r["age"] < patience for r in rows):
            break
        await asyncio.sleep(LANDING_POLL_SECONDS)  # the heartbeat ticker runs meanwhile
    await mark_lost(pool, workflow_id, invoices)
    # Read again whatever happened: a live earlier attempt may have answered some since this one
    # read its batch (it can claim nothing new now that this attempt holds the fence).
    left = await still_to_extract(pool, workflow_id, invoices)
    return [row for row in pending if row["invoice_no"] in left]


async def _settle_failures(pool: asyncpg.Pool, book: CallBook, settings: Settings,
                           workflow_id: str, asked: int, tally: _Tally) -> None:
    share = settings.model_max_failed_share
    if await _provider_is_down(pool, workflow_id, len(tally.failed), asked, share):
        shown = "; ".join(f"{row['invoice_no']}: {errors[-1].text()}"
                          for row, errors in tally.failed[:5])
        more = f" (and {len(tally.failed) - 5} more)" if len(tally.failed) > 5 else ""
        raise ApplicationError(
            f"the model failed {len(tally.failed)} of {asked} invoices after "
            f"{settings.model_tries} tries each (more than {share:.0%}): {shown}{more}",
            {"failed": [{"invoice_no": row["invoice_no"], "errors": [f.text() for f in errors]}
                        for row, errors in tally.failed[:50]]},
            type="ModelUnavailable", non_retryable=True,
        )
    for row, errors in tally.failed:
        if errors[-1].kind == "rejected":
            reason = f"{MODEL_FAILED}: the provider refused this document: {errors[-1].text()}"
        else:
            reason = f"{MODEL_FAILED} {len(errors)} times: {errors[-1].text()}"
        await book.park(row["invoice_no"], reason, _evidence(errors))
        tally.parked += 1
