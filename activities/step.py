"""Every step activity goes through `business_step`, which does two things once for all steps:

1. It heartbeats on a timer, carrying the step's latest `report_progress()` value, so a slow model
   call or a long batch never looks like a dead worker, a dead worker is noticed within the
   heartbeat timeout, and a retry knows roughly how far the last attempt got.
2. It turns an exception into Temporal's language by the classes of recon.errors:
   temporary -> retryable until the 4th attempt (at most 3 retries), then non-retryable, each
                retry after a growing wait set on the error (recon.errors.retry_wait);
   unknown   -> non-retryable at once: the workflow stops and hands the run to a person.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from recon import failpoints
from recon.errors import classify, retry_wait

P = ParamSpec("P")
R = TypeVar("R")

MAX_ATTEMPTS_FOR_TEMPORARY = 4

# A mutable box per attempt: the ticker task holds a copy of the context, so it must share the box.
_progress: contextvars.ContextVar[dict] = contextvars.ContextVar("progress")


def report_progress(position: int) -> None:
    """Record how far this attempt got; the ticker heartbeats it. The first report of an attempt
    is heartbeated at once (the SDK sends a first heartbeat immediately), so a retry always
    knows at least the first committed batch, without a heartbeat per item on hot loops."""
    box = _progress.get()
    first = not box.get("reported")
    box["at"], box["reported"] = position, True
    if first:
        activity.heartbeat(position)


def last_progress(default: int = 0) -> int:
    """What the previous attempt's last *delivered* heartbeat carried. The attempt may have got
    further (heartbeats are throttled and a dying process loses unsent ones): the keys make the
    few entries walked again harmless."""
    details = activity.info().heartbeat_details
    if details and isinstance(details[0], int):
        return details[0]
    return default


def _beat() -> None:
    position = _progress.get({"at": None})["at"]
    if position is None:
        activity.heartbeat()
    else:
        activity.heartbeat(position)


async def _keep_alive() -> None:
    timeout = activity.info().heartbeat_timeout
    every = timeout.total_seconds() / 4 if timeout else 1.0
    while True:
        await asyncio.sleep(every)
        _beat()


def business_step(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        failpoints.before_step(activity.info().activity_type)
        _progress.set({"at": last_progress() or None})
        ticker = asyncio.create_task(_keep_alive())  # copies this context: sees report_progress
        try:
            return await fn(*args, **kwargs)
        except (ApplicationError, asyncio.CancelledError):
            raise
        except Exception as exc:
            kind = classify(exc)
            attempt = activity.info().attempt
            give_up = kind != "temporary" or attempt >= MAX_ATTEMPTS_FOR_TEMPORARY
            error_type = type(exc).__name__
            if kind == "temporary" and give_up:
                error_type = "TemporaryErrorsExhausted"
            raise ApplicationError(
                f"{type(exc).__name__}: {exc}",
                {"class": kind, "attempt": attempt},
                type=error_type,
                non_retryable=give_up,
                next_retry_delay=None if give_up else retry_wait(kind, attempt),
            ) from exc
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
            _beat()

    return wrapper
