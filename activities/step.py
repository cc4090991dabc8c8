"""Every step activity goes through `business_step`, which does three things once for all steps:

1. It heartbeats on a timer, carrying the step's latest `report_progress()` value, so a slow model
   call or a long batch never looks like a dead worker, a dead worker is noticed within the
   heartbeat timeout, and a retry knows roughly how far the last attempt got.
2. It turns an exception into Temporal's language by the classes of recon.domain.errors:
   temporary -> retryable with growing waits for the outage window, then non-retryable;
   stale     -> retryable, soon: a stale attempt's failure is ignored, a live one retries newer;
   unknown   -> non-retryable at once: the workflow stops and hands the run to a person.
3. A retried attempt first makes Temporal forget the run's sticky queue, in case the worker that
   held it is the one that died (activities/lost_worker.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import ParamSpec, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.lost_worker import forget_sticky_worker
from recon.domain.errors import StaleAttempt, classify, outage_in_words, retry_wait
from recon.domain.redaction import mask_known, mask_value
from recon.domain.settings_table import default_of
from recon.runtime import failpoints

P = ParamSpec("P")
R = TypeVar("R")

# Temporary errors (a database, model provider or Temporal restarting) are retried with growing
# waits, capped, for the outage window (RECON_OUTAGE_WINDOW) before the run asks a person. The
# outage's start travels from attempt to attempt in the heartbeat details.
RETRY_WAIT_CAP_SECONDS = 30.0

# A mutable box per attempt: the ticker task holds a copy of the context, so it must share the box.
_progress: contextvars.ContextVar[dict] = contextvars.ContextVar("progress")


def report_progress(position: int) -> None:
    """Record how far this attempt got; the ticker heartbeats it. The first report of an attempt
    is heartbeated at once (the SDK sends a first heartbeat immediately), so a retry always
    knows at least the first committed batch, without a heartbeat per item on hot loops."""
    box = _progress.get()
    first = not box.get("reported")
    box["at"], box["reported"] = position, True
    box["outage_since"] = None  # progress: whatever outage there was is over
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


def _outage_since() -> float | None:
    """When the outage the previous attempts failed on began (epoch seconds), if any."""
    details = activity.info().heartbeat_details
    if len(details) > 1 and isinstance(details[1], int | float):
        return float(details[1])
    return None


def _beat() -> None:
    box = _progress.get({"at": None})
    position, since = box.get("at"), box.get("outage_since")
    if since is not None:
        activity.heartbeat(position, since)
    elif position is None:
        activity.heartbeat()
    else:
        activity.heartbeat(position)


def _outage_window(args: tuple) -> float:
    """The window of the activity's class (a method's `self` carries the worker's settings);
    the setting's default for a plain function, as in a test of one step."""
    window = getattr(args[0], "outage_window_seconds", None) if args else None
    return window if isinstance(window, int | float) else default_of("RECON_OUTAGE_WINDOW")


def _temporary(exc: Exception, attempt: int, window: float) -> ApplicationError:
    """Retry soon and then less often, until the outage has lasted the whole window; then say
    in words what was down and since when, and hand over."""
    box = _progress.get()
    now = time.time()
    since = box.get("outage_since") or now
    box["outage_since"] = since
    lasted = now - since
    what = outage_in_words(exc)
    started = datetime.fromtimestamp(since, UTC).strftime("%H:%M:%S UTC")
    if lasted >= window:
        return ApplicationError(
            f"{what} since {started} ({lasted / 60:.0f} min, {attempt} attempts), "
            f"longer than the {window / 60:.0f}-minute outage window: "
            f"{type(exc).__name__}: {mask_known(str(exc))}",
            {"class": "temporary", "attempt": attempt, "outage_since": since},
            type="TemporaryErrorsExhausted", non_retryable=True,
        )
    grown = retry_wait("temporary", min(attempt, 12)) or timedelta(0)
    wait = min(RETRY_WAIT_CAP_SECONDS, grown.total_seconds())
    return ApplicationError(
        f"{what} since {started}: {type(exc).__name__}: {mask_known(str(exc))}",
        {"class": "temporary", "attempt": attempt, "outage_since": since},
        type=type(exc).__name__, non_retryable=False, next_retry_delay=timedelta(seconds=wait),
    )


def _leaks(exc: BaseException) -> bool:
    """Does the error, or any error it was raised from, say a secret of this worker?"""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        if mask_known(str(at)) != str(at):
            return True
        at = at.__cause__ or at.__context__
    return False


def _masked(err: ApplicationError) -> ApplicationError:
    """The same ApplicationError with every secret of this worker masked, and no cause."""
    return ApplicationError(
        mask_known(err.message), *(mask_value("details", d) for d in err.details),
        type=err.type, non_retryable=err.non_retryable, next_retry_delay=err.next_retry_delay,
        category=err.category)


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
        if activity.info().attempt > 1:  # the last attempt's worker may be gone
            await forget_sticky_worker(getattr(args[0], "client", None) if args else None)
        _progress.set({"at": last_progress() or None, "outage_since": _outage_since()})
        ticker = asyncio.create_task(_keep_alive())  # copies this context: sees report_progress
        try:
            await failpoints.hold_before(activity.info().activity_type)
            return await fn(*args, **kwargs)
        except asyncio.CancelledError:
            raise
        except ApplicationError as exc:
            if _leaks(exc):
                raise _masked(exc) from None
            raise
        except StaleAttempt as exc:
            # Never a reason to stop the night: if this attempt is really stale, Temporal ignores
            # its failure; if it is the live one (it met a token a stale attempt took), the retry
            # is a newer attempt that takes the fence back. Soon, and not counted as an error.
            raise ApplicationError(
                mask_known(str(exc)), {"class": "stale", "attempt": activity.info().attempt},
                type="StaleAttempt", non_retryable=False,
                next_retry_delay=timedelta(milliseconds=100),
            ) from (None if _leaks(exc) else exc)
        except Exception as exc:
            attempt = activity.info().attempt
            # The cause goes to Temporal too (its message in the failure's cause): left out when
            # it holds a secret of this worker (the message itself is masked by value).
            cause = None if _leaks(exc) else exc
            if classify(exc) == "temporary":
                raise _temporary(exc, attempt, _outage_window(args)) from cause
            # Unknown: stop at once. The type travels in `type`, the message is the error's own,
            # so a note reads "RaiseError: period locked", never the type twice.
            raise ApplicationError(
                mask_known(str(exc)) or type(exc).__name__, {"class": "unknown", "attempt": attempt},
                type=type(exc).__name__, non_retryable=True,
            ) from cause
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
            _beat()

    return wrapper
