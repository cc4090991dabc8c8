"""The provider's batch interface (OpenAI Batch API), through the SDK's public surface only.

What a batch request is (the same request the interactive path records and sends, one JSONL line
with the invoice's key as `custom_id`), how a night is cut into groups within the provider's
limits, how a batch is found again by its metadata (the interface has no idempotency key), and how
an output or error line becomes an answer or a failure. No database here: the activities
(`activities/model_batches.py`) record, this module speaks.

The client is the extractor's own: `max_retries=0`, so `batches.create` is never retried by the
SDK (a retried create after a timeout makes a second batch, paid twice).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, time, timedelta

import openai
from openai.lib._parsing._completions import type_to_response_format_param

from recon.documents.extraction.answer import Answer
from recon.documents.extraction.failures import REJECTED_FOR_THE_DOCUMENT
from recon.documents.extraction.wire_schema import InvoiceAnswer

ENDPOINT = "/v1/chat/completions"
WINDOW = "24h"  # the only window the provider offers
# The provider's statuses: still going, and over (a cancelled, expired or failed batch has
# answered what it answered: those lines are in its output file, and billed).
RUNNING = frozenset({"validating", "in_progress", "finalizing", "cancelling"})
OVER = frozenset({"completed", "cancelled", "expired", "failed"})
# A create found in the provider's list must be newer than our first try at it, less this margin
# (the provider's clock and ours): older batches end the scan.
CLOCK_MARGIN = timedelta(minutes=30)
LIST_PAGE = 100

_RESPONSE_FORMAT = type_to_response_format_param(InvoiceAnswer)


def line_of(custom_id: str, recorded_request: str) -> str:
    """One input line: the recorded request (model and messages, word for word) with the strict
    structured-output format and temperature the interactive request sends."""
    request = json.loads(recorded_request)
    body = {"model": request["model"], "messages": request["messages"],
            "response_format": _RESPONSE_FORMAT, "temperature": 0}
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body},
                      ensure_ascii=False) + "\n"


def cut_into_groups(lines: list[tuple[str, str]], max_requests: int,
                    max_bytes: int) -> list[list[tuple[str, str]]]:
    """(custom_id, line) in order, cut so no group passes either limit."""
    groups: list[list[tuple[str, str]]] = []
    size = 0
    for item in lines:
        length = len(item[1].encode())
        if not groups or len(groups[-1]) >= max_requests or size + length > max_bytes:
            groups.append([])
            size = 0
        groups[-1].append(item)
        size += length
    return groups


def deadline_after(start: datetime, clock: str | None) -> datetime | None:
    """The first local `HH:MM[:SS]` after `start` (an aware datetime in the worker's zone): a night
    submitted at 23:10 with 05:30 waits until 05:30 the next morning."""
    if not clock:
        return None
    h, m, s = (int(p) for p in clock.split(":"))
    local = start.astimezone()
    at = datetime.combine(local.date(), time(h, m, s), tzinfo=local.tzinfo)
    return at if at > local else at + timedelta(days=1)


@dataclass(frozen=True)
class Line:
    """One line of an output or error file, as recon reads it."""

    custom_id: str
    status: int | None  # the answer's HTTP status; None for a line the batch never ran
    answer: Answer | None  # a 200's answer, word for word
    code: str  # the error's code (`batch_expired`), or ""
    message: str

    @property
    def rejected(self) -> bool:
        """A refusal about the document itself: permanent for that invoice, as interactively."""
        return self.status in REJECTED_FOR_THE_DOCUMENT


def read_line(raw: str, requests: dict[str, str]) -> Line:
    """An output line (200) into an `Answer`, as `OpenAIExtractor.send` reads a completion: the
    message content word for word (a refusal as `{"unreadable": ...}`) and the usage."""
    data = json.loads(raw)
    custom_id = str(data.get("custom_id"))
    response = data.get("response") or {}
    error = data.get("error") or {}
    status = response.get("status_code")
    body = response.get("body") or {}
    if status == 200 and isinstance(body, dict) and body.get("choices"):
        message = body["choices"][0].get("message") or {}
        usage = body.get("usage") or {}
        if message.get("refusal"):
            text = json.dumps({"unreadable": f"model refused: {message['refusal']}"})
        else:
            text = message.get("content") or ""
        answer = Answer(request=requests.get(custom_id, ""), response=text,
                        prompt_tokens=usage.get("prompt_tokens"),
                        completion_tokens=usage.get("completion_tokens"))
        return Line(custom_id, 200, answer, "", "")
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
    message = str(error.get("message") or f"status {status}")
    return Line(custom_id, status if isinstance(status, int) else None, None,
                str(error.get("code") or ""), message)


def lines_of(text: str, requests: dict[str, str]) -> Iterable[Line]:
    for raw in text.splitlines():
        if raw.strip():
            yield read_line(raw, requests)


class _Scan:
    """When a newest-first scan may stop: after a whole page's worth of items in a row older than
    the floor (a list not quite in order does not end it early), or at an item seen before (a
    server whose paging goes round in circles)."""

    def __init__(self, floor: float) -> None:
        self.floor = floor
        self.older_in_a_row = 0
        self.seen: set[str] = set()

    def done(self, item_id: str, created_at: float) -> bool:
        if item_id in self.seen:
            return True
        self.seen.add(item_id)
        self.older_in_a_row = self.older_in_a_row + 1 if created_at < self.floor else 0
        return self.older_in_a_row >= LIST_PAGE


class BatchModel:
    """The SDK calls of batch mode, on the extractor's client (no SDK retries)."""

    def __init__(self, client: openai.AsyncOpenAI, upload_timeout: float) -> None:
        self.client = client
        self.upload_timeout = upload_timeout

    async def find_file(self, name: str, since: datetime) -> str | None:
        """An input file of ours uploaded by an earlier attempt (newest first, down to `since`)."""
        floor = (since - CLOCK_MARGIN).timestamp()
        scan = _Scan(floor)
        async for stored in self.client.files.list(purpose="batch", limit=LIST_PAGE):
            if stored.filename == name:
                return stored.id
            if scan.done(stored.id, stored.created_at):
                return None
        return None

    async def upload(self, name: str, content: bytes) -> str:
        stored = await self.client.files.create(file=(name, io.BytesIO(content)), purpose="batch",
                                                timeout=self.upload_timeout)
        return stored.id

    async def find_batch(self, key: str, input_file_id: str,
                         since: datetime) -> openai.types.Batch | None:
        """The batch whose metadata names this group (or, should the list drop the metadata,
        that reads this group's uploaded file), scanning the provider's list newest first (it has
        no filter) down to batches older than our first create."""
        scan = _Scan((since - CLOCK_MARGIN).timestamp())
        async for batch in self.client.batches.list(limit=LIST_PAGE):
            if (batch.metadata or {}).get("recon_key") == key or batch.input_file_id == input_file_id:
                return batch
            if scan.done(batch.id, batch.created_at):
                return None
        return None

    async def create(self, input_file_id: str, metadata: dict[str, str]) -> openai.types.Batch:
        return await self.client.batches.create(
            input_file_id=input_file_id, endpoint=ENDPOINT, completion_window=WINDOW,
            metadata=metadata)

    async def look(self, batch_id: str) -> openai.types.Batch:
        return await self.client.batches.retrieve(batch_id)

    async def cancel(self, batch_id: str) -> openai.types.Batch:
        return await self.client.batches.cancel(batch_id)

    async def content(self, file_id: str | None) -> str:
        if not file_id:
            return ""
        response = await self.client.files.content(file_id, timeout=self.upload_timeout)
        return response.text
