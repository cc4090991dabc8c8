"""What a failed model request tells us: its class, status, message and the wait it asks for."""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass

import openai

from recon.domain.errors import classify
from recon.domain.redaction import mask_known

# A request the provider refuses for what it holds (too long for the context, a content filter,
# a body too large, an unprocessable document): permanent for that one invoice, which is parked
# while its siblings go on. 401/403/404 (key, permission, model) are about every request: unknown.
REJECTED_FOR_THE_DOCUMENT = frozenset({400, 413, 422})


@dataclass(frozen=True)
class Failure:
    kind: str  # "temporary" (ask again), "rejected" (park this invoice) or "unknown" (stop)
    status: int | None
    message: str
    retry_after: float | None  # seconds the server asked us to wait, if it did

    def text(self) -> str:
        return f"{self.status} {self.message}" if self.status else self.message


def _retry_after(headers) -> float | None:
    """`retry-after-ms` (OpenAI), else `Retry-After` in seconds or as an HTTP date."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def describe(exc: BaseException) -> Failure:
    status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        message = body["message"]  # the server's own words, without the SDK's prefix
    retry_after = None
    if isinstance(exc, openai.APIStatusError):
        retry_after = _retry_after(exc.response.headers)
    kind = "rejected" if status in REJECTED_FOR_THE_DOCUMENT else classify(exc)
    # a provider may echo the key ("Incorrect API key provided: sk-..."): masked by value here,
    # where its words enter, before they become a parked reason, a note or a log line
    return Failure(kind, status, mask_known(f"{type(exc).__name__}: {message}"), retry_after)
