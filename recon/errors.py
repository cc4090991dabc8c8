"""The three failure classes of docs/design.md §2, decided in one place.

temporary  -> retry (same keys) a few times with growing waits
permanent  -> for one item: park it (handled where the item is known)
unknown    -> stop the run and hand it to a person
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import asyncpg


class DatabaseUnavailable(RuntimeError):
    """Postgres cannot be reached: a one-line reason for the CLI, a temporary error for a step."""


class KeyPayloadConflict(Exception):
    """The same idempotency key arrived with a different payload: a bug, not a duplicate."""


class VerificationFailed(Exception):
    """A step reached its end but the store does not hold what the step meant to write."""


class StaleAttempt(Exception):
    """This attempt's fencing token is older than the newest one: its work was handed over."""


TEMPORARY_PG = (
    asyncpg.SerializationError,
    asyncpg.DeadlockDetectedError,
    asyncpg.TooManyConnectionsError,
    asyncpg.CannotConnectNowError,
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.InterfaceError,
    asyncpg.QueryCanceledError,
    asyncpg.AdminShutdownError,
)


def _is_temporary_model_error(exc: BaseException) -> bool:
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a dependency
        return False
    if isinstance(exc, openai.RateLimitError | openai.APIConnectionError | openai.APITimeoutError):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _is_temporal_unreachable(exc: BaseException) -> bool:
    from temporalio.service import RPCError, RPCStatusCode

    return isinstance(exc, RPCError) and exc.status in (
        RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.UNKNOWN,
        RPCStatusCode.RESOURCE_EXHAUSTED, RPCStatusCode.ABORTED, RPCStatusCode.INTERNAL,
    )


def classify(exc: BaseException) -> str:
    """'temporary' or 'unknown'. Permanent-for-one-item failures never reach here: they park."""
    if isinstance(exc, (*TEMPORARY_PG, ConnectionError, TimeoutError, asyncio.TimeoutError)):
        return "temporary"
    if isinstance(exc, OSError):
        return "temporary"
    if _is_temporary_model_error(exc) or _is_temporal_unreachable(exc):
        return "temporary"
    return "unknown"


def outage_in_words(exc: BaseException) -> str:
    """What a temporary error means for the person reading a handover note."""
    if _is_temporal_unreachable(exc):
        return "Temporal unreachable"
    if _is_temporary_model_error(exc):
        status = getattr(exc, "status_code", None)
        return f"model provider answering {status}" if status else "model provider unreachable"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):  # an OSError too: ask first
        return "timed out"
    if isinstance(exc, (*TEMPORARY_PG, OSError)):
        return "database unreachable"
    return "temporary errors"


TEMPORARY_FIRST_WAIT = timedelta(seconds=1)


def retry_wait(kind: str, attempt: int) -> timedelta | None:
    """How long the next attempt waits after this error: 1 s, 2 s, 4 s for a temporary error
    (the service that pushed back needs time), None (the policy's short wait) otherwise. The
    policy's 0.1 s is meant for a lost worker, where nothing needs to recover."""
    if kind != "temporary":
        return None
    return TEMPORARY_FIRST_WAIT * 2 ** max(attempt - 1, 0)
