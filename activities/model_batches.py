"""Step 2 in batch mode (`RECON_MODEL_MODE=batch`): submit once, wait durably, read once.

1. `submit_model_batches` plans the night's model-bound invoices into groups (each request a
   `model_calls` row, outcome `batched`, before anything leaves), uploads each group's file and
   creates its batch. The create is never retried blindly: the client has no SDK retries, the
   moment of the first try is committed before it, and any attempt that may have created the
   batch (a cut reply, a timeout, a worker killed after the call) scans the provider's list for
   the group's metadata before it creates one.
2. `wait_for_model_batch` looks once and raises while the batch runs: the workflow retries it at a
   fixed interval (`RECON_MODEL_BATCH_POLL`), so no worker slot is held and the history does not
   grow per look. Past `RECON_MODEL_BATCH_DEADLINE` it cancels the batch (a cancelled batch keeps
   the answers it completed).
3. `read_model_batch` records the output file's answers word for word, checked as interactive
   answers are, and the error file's lines as failed requests, in one transaction per group that
   also marks the group read: a kill while reading reads the same files again, and each request
   is settled once.

What the batch did not answer is then asked interactively by the usual step (workflows/extraction.py),
which asks only invoices that have neither an extraction nor a parking: nothing is asked twice.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

import openai
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.extraction_paid import MODEL_FAILED
from activities.resources import Room
from activities.step import business_step
from recon.documents.extraction.answer import read_answer
from recon.documents.extraction.batch_model import (
    OVER,
    BatchModel,
    Line,
    cut_into_groups,
    deadline_after,
    line_of,
    lines_of,
)
from recon.documents.extraction.document_reader import owns as owns_document
from recon.documents.extraction.failures import describe
from recon.documents.extraction.openai_model import OpenAIExtractor
from recon.documents.extraction.results import Result
from recon.domain.errors import UnreadableInvoice
from recon.domain.models import Count, ModelBatchGroup, ModelBatchNight
from recon.runtime import failpoints
from recon.store import model_batches as store
from recon.store.extractions import park_unreadable, write_results
from recon.store.generations import current_generation
from recon.store.invoices import not_yet_extracted

FAILPOINT = "model_batch"  # positions: before_upload, after_upload, after_create, mid_read, after_read
LAST_SEQ = 2**31 - 1
# An uncertain create is not made again until this long (at least) after the first try.
MIN_SETTLE_SECONDS = 30.0
UPLOAD_TIMEOUT = 600.0  # seconds for one file up or down (up to 200 MB)


def batch_prices(settings) -> tuple[float, float]:
    """USD per million tokens of a batch request: explicit, or the interactive price × factor."""
    factor = settings.model_batch_price_factor
    price_in = (float(settings.model_batch_price_in) if settings.model_batch_price_in
                else settings.model_price_in * factor)
    price_out = (float(settings.model_batch_price_out) if settings.model_batch_price_out
                 else settings.model_price_out * factor)
    return price_in, price_out


class ModelBatchActivities(Room):
    """Step 2 through the provider's batch interface."""

    def _model(self) -> BatchModel:
        assert isinstance(self.extractor, OpenAIExtractor)
        return BatchModel(self.extractor.client, UPLOAD_TIMEOUT)

    # ------------------------------------------------------------------ 1. submit once
    @activity.defn(name="submit_model_batches")
    @business_step
    async def submit_model_batches(self, night: ModelBatchNight) -> list[str]:
        extractor = self.extractor
        if not isinstance(extractor, OpenAIExtractor):
            return []  # the offline parser is free: nothing to batch
        wf = night.workflow_id
        async with self.pool.acquire() as conn:
            generation = await current_generation(conn, wf)
            groups = await store.groups_of(conn, wf, generation)
            if not groups:
                await self._plan(conn, extractor, wf, generation)
                groups = await store.groups_of(conn, wf, generation)
        for group in groups:
            if group["batch_id"] is None:
                await self._submit(group)
        return [g["key"] for g in groups]

    async def _plan(self, conn, extractor: OpenAIExtractor, wf: str, generation: int) -> None:
        settings = self.settings
        pending = await not_yet_extracted(conn, wf, 1, LAST_SEQ)
        bound = [r for r in pending if not owns_document(r["document"])
                 and len(r["document"].encode()) <= settings.model_max_document_bytes]
        requests = {r["invoice_no"]: extractor.prepare(r["invoice_no"], r["document"]).request
                    for r in bound}
        cut = cut_into_groups([(inv, line_of(inv, req)) for inv, req in requests.items()],
                              settings.model_batch_max_requests, settings.model_batch_max_bytes)
        plans = []
        for n, group in enumerate(cut, 1):
            key = f"{wf}:g{generation}:b{n}"
            plans.append((key, f"recon-{key.replace(':', '_')}.jsonl",
                          [store.PlannedRequest(inv, requests[inv]) for inv, _ in group]))
        info = activity.info()
        await store.plan(conn, wf, generation, plans, extractor.name, extractor.model,
                         batch_prices(settings), f"{info.workflow_run_id}/{info.activity_id}"
                         f"#{info.attempt}",
                         deadline_after(datetime.now(UTC), settings.model_batch_deadline))

    async def _submit(self, group) -> None:
        key, model = group["key"], self._model()
        rows = await store.requests_of(self.pool, key)
        content = "".join(line_of(r["invoice_no"], r["request"]) for r in rows).encode()
        failpoints.hit(FAILPOINT, "before_upload")
        file_id = group["input_file_id"]
        if file_id is None:
            file_id = (await model.find_file(group["input_name"], group["created_at"])
                       or await model.upload(group["input_name"], content))
            await store.set_input_file(self.pool, key, file_id)
        failpoints.hit(FAILPOINT, "after_upload")
        if group["create_started_at"] is not None:
            # An earlier attempt tried: its batch may exist. Look before creating another.
            found = await model.find_batch(key, file_id, group["create_started_at"])
            if found is not None:
                await store.set_batch(self.pool, key, found.id, found.status)
                return
            # Not there: a create that timed out may still be landing. Create again only once no
            # create of ours can still be in flight (twice the call's timeout after the first).
            settle = timedelta(seconds=max(2 * self.settings.model_timeout, MIN_SETTLE_SECONDS))
            if datetime.now(UTC) < group["create_started_at"] + settle:
                raise ConnectionError(f"the model's batch for {key}: a create may still be landing;"
                                      " looking again before creating one")
        since = await store.mark_create_started(self.pool, key)
        metadata = {"recon_key": key, "recon_night": group["workflow_id"][:500],
                    "recon_generation": str(group["generation"]),
                    "recon_group": str(group["group_no"])}
        try:
            batch = await model.create(file_id, metadata)
        except (openai.APIConnectionError, openai.InternalServerError):
            # The reply was lost (a cut, a timeout) or the server failed: the batch may exist.
            found = await model.find_batch(key, file_id, since)
            if found is None:
                raise  # temporary: the next attempt looks again before creating
            batch = found
        failpoints.hit(FAILPOINT, "after_create")
        await store.set_batch(self.pool, key, batch.id, batch.status)

    # ------------------------------------------------------------------ 2. wait durably
    @activity.defn(name="wait_for_model_batch")
    async def wait_for_model_batch(self, group: ModelBatchGroup) -> str:
        """One look. Returns the batch's final status, or raises to be asked again after the
        workflow's fixed interval (the retries are not in the history)."""
        row = await store.batch_row(self.pool, group.key)
        if row["read_at"] is not None:
            return row["status"]
        # Even a status recorded as over is looked at again: only a look records the files
        # (a batch found by its metadata is recorded with its status, without them).
        model = self._model()
        try:
            batch = await model.look(row["batch_id"])
            counts = batch.request_counts
            answered = counts.completed if counts else 0
            failed = counts.failed if counts else 0
            await store.set_progress(self.pool, group.key, batch.status, answered, failed,
                                     batch.output_file_id, batch.error_file_id)
            if batch.status in OVER and (answered == 0 or batch.output_file_id):
                return batch.status
            # Over with answers but no output file yet: reading now would ask them again (paid
            # twice), so the night waits for the file.
            deadline = row["deadline_at"]
            if (deadline is not None and datetime.now(UTC) >= deadline
                    and batch.status != "cancelling"):
                with contextlib.suppress(openai.OpenAIError):
                    # Refused (already over, already cancelling) or lost: the next look tells.
                    await model.cancel(row["batch_id"])
                    await store.mark_cancel_asked(self.pool, group.key)
        except openai.OpenAIError as exc:
            failure = describe(exc)
            if failure.status in (401, 403):  # the key: no later look can succeed
                raise ApplicationError(f"the model's batch {row['batch_id']}: {failure.text()}",
                                       type="ModelUnavailable", non_retryable=True) from None
            raise ApplicationError(f"waiting for the model's batch ({row['answered']} of "
                                   f"{row['requests']} answered; {failure.text()})",
                                   type="ModelBatchWaiting") from None
        raise ApplicationError(f"waiting for the model's batch ({answered} of {row['requests']} "
                               f"answered)", type="ModelBatchWaiting")

    # ------------------------------------------------------------------ 3. read once
    @activity.defn(name="read_model_batch")
    @business_step
    async def read_model_batch(self, group: ModelBatchGroup) -> Count:
        extractor = self.extractor
        assert isinstance(extractor, OpenAIExtractor)
        row = await store.batch_row(self.pool, group.key)
        if row["read_at"] is not None:
            return await self._count_read(group)  # read before, by an attempt that then died
        model = self._model()
        calls = {r["invoice_no"]: r for r in await store.requests_of(self.pool, group.key)}
        requests = {inv: r["request"] for inv, r in calls.items()}
        try:
            output = await model.content(row["output_file_id"])
            errors = await model.content(row["error_file_id"])
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise
            # A file the provider does not serve yet (404) or a server error: read again later.
            raise ConnectionError(f"the model's batch files for {group.key}: "
                                  f"{describe(exc).text()}") from None
        lines = [*lines_of(output, requests), *lines_of(errors, requests)]
        docs = await store.documents_of(self.pool, group.workflow_id, list(calls))
        results: list[Result] = []
        unanswered: list[tuple[str, str, int | None, str | None]] = []
        refused: list[tuple[str, str, str]] = []
        seen: set[str] = set()
        for line in lines:
            if line.custom_id not in calls or line.custom_id in seen:
                continue  # not ours, or a line repeated: each request is settled once
            seen.add(line.custom_id)
            if line.answer is not None:
                results.append(self._checked(line, calls[line.custom_id]["id"],
                                             docs[line.custom_id]))
                continue
            text = f"{line.code}: {line.message}" if line.code else line.message
            unanswered.append((line.custom_id, "error", line.status, text))
            if line.rejected:  # about this document: never asked again, as interactively
                refused.append((line.custom_id,
                                f"{MODEL_FAILED}: the provider refused this document: "
                                f"{line.status} {line.message}", docs[line.custom_id]["document"][:200]))
        outcome = "cancelled" if row["status"] in ("cancelled", "expired") else "error"
        for invoice_no in calls:
            if invoice_no not in seen:
                unanswered.append((invoice_no, outcome, None,
                                   f"the batch ended {row['status']} without answering it"))
        async with self.pool.acquire() as conn, conn.transaction():
            locked = await store.lock_for_reading(conn, group.key)
            if locked["read_at"] is not None:
                return await self._count_read(group)  # a racing attempt read it first
            await write_results(conn, group.workflow_id, extractor.name, extractor.model, results)
            await store.settle_unanswered(conn, group.key, unanswered)
            if refused:
                await park_unreadable(conn, group.workflow_id, refused)
            failpoints.hit(FAILPOINT, "mid_read")  # before the commit: all of it or none
            await store.mark_read(conn, group.key)
        failpoints.hit(FAILPOINT, "after_read")  # committed, not yet reported: read again
        parked = sum(1 for r in results if not r.readable) + len(refused)
        return Count(count=len(results) - sum(1 for r in results if not r.readable), parked=parked)

    async def _count_read(self, group: ModelBatchGroup) -> Count:
        """What a group read earlier extracted and parked, from the records: an attempt that
        finds the group read reports the same figures as the one that read it."""
        extracted, parked = await store.read_counts(self.pool, group.workflow_id, group.key)
        return Count(count=extracted, parked=parked)

    @staticmethod
    def _checked(line: Line, call_id: int, doc) -> Result:
        """An answer checked as every interactive one is: the schema, then the document."""
        answer = line.answer
        assert answer is not None
        result = Result(doc["invoice_no"], doc["supplier_id"], answer.request, answer.response,
                        call_id=call_id, prompt_tokens=answer.prompt_tokens,
                        completion_tokens=answer.completion_tokens)
        try:
            result.found = read_answer(answer)
        except UnreadableInvoice as exc:
            result.unreadable = exc
        return result.check_against_source(doc["document"])
