"""An extractor's answer, kept verbatim, and reading it as our schema.

Calling and validating are separate so the exact answer is recorded in `model_calls` even when it
fails the schema."""


from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

from pydantic import ValidationError

from recon.documents.extraction.schema import ExtractedInvoice, UnreadableInvoice


@dataclass(frozen=True)
class Answer:
    request: str
    response: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class Extractor(Protocol):
    name: str
    model: str
    paid: bool  # False: a local parser, free and instant (recorded in groups, see extract_lines)

    async def call(self, invoice_no: str, document: str) -> Answer:
        """Send one request; raise only for temporary failures (network, 429, 5xx)."""
        ...


def read_answer(answer: Answer) -> ExtractedInvoice:
    """The answer as our schema, or UnreadableInvoice (permanent for this invoice).

    The good path validates the text in one pass (`model_validate_json`, no dict in between);
    only a failing answer is read again as plain JSON, to tell "unreadable" and "not JSON" apart."""
    try:
        return ExtractedInvoice.model_validate_json(answer.response)
    except ValidationError as exc:
        failure = exc
    try:
        data = json.loads(answer.response)
    except json.JSONDecodeError as exc:
        raise UnreadableInvoice(f"answer is not JSON: {exc.msg}", answer.response[:200]) from exc
    if isinstance(data, dict) and "unreadable" in data:
        raise UnreadableInvoice(str(data["unreadable"]), str(data.get("evidence", ""))[:200])
    try:
        ExtractedInvoice.model_validate(data)  # the error as the dict sees it (stable locations)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UnreadableInvoice(
            f"answer fails the schema at {where}: {first['msg']}", answer.response[:200]
        ) from exc
    raise UnreadableInvoice(f"answer fails the schema: {failure.errors()[0]['msg']}",
                            answer.response[:200])
