"""`business_step` alone, in Temporal's ActivityEnvironment (no worker, no server): how each
error class becomes Temporal's language, and that reported progress is heartbeated."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import timedelta

import asyncpg
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.step import RETRY_WAIT_CAP_SECONDS, business_step, last_progress, report_progress
from recon.domain.errors import StaleAttempt


def _env(attempt: int = 1, heartbeat_details: list | None = None, heartbeat: float | None = None,
         ) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, activity_type="post_adjustments", attempt=attempt,
        heartbeat_details=heartbeat_details or [],
        heartbeat_timeout=timedelta(seconds=heartbeat) if heartbeat else None,
    )
    return env


def _beating(**kwargs) -> tuple[ActivityEnvironment, list[tuple]]:
    """An environment whose heartbeats are collected (the ticker beats every heartbeat / 4)."""
    env, beats = _env(**kwargs), []
    env.on_heartbeat = lambda *details: beats.append(details)
    return env, beats


def _failing(exc: Exception):
    @business_step
    async def step() -> None:
        raise exc

    return step


async def _error_of(env: ActivityEnvironment, fn) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await env.run(fn)
    return caught.value


async def test_an_unknown_error_stops_at_once_with_its_type_and_its_own_message() -> None:
    err = await _error_of(_env(attempt=2), _failing(ValueError("period locked")))
    assert err.non_retryable
    assert err.type == "ValueError"
    assert err.message == "period locked", "the type travels in `type`, never twice in the note"
    assert err.details == ({"class": "unknown", "attempt": 2},)
    assert isinstance(err.__cause__, ValueError)


async def test_an_unknown_error_without_a_message_is_named_by_its_type() -> None:
    err = await _error_of(_env(), _failing(KeyError()))
    assert (err.type, err.message, err.non_retryable) == ("KeyError", "KeyError", True)


async def test_a_temporary_error_is_retried_with_growing_capped_waits() -> None:
    waits = []
    for attempt in range(1, 13):
        err = await _error_of(_env(attempt=attempt), _failing(ConnectionResetError(104, "reset")))
        assert not err.non_retryable
        assert err.type == "ConnectionResetError"
        assert "database unreachable since" in err.message and "reset" in err.message
        assert err.details[0]["class"] == "temporary" and err.details[0]["attempt"] == attempt
        assert err.next_retry_delay is not None
        waits.append(err.next_retry_delay.total_seconds())
    assert waits[:3] == [1.0, 2.0, 4.0], "the first retries come soon"
    assert all(b >= a for a, b in zip(waits, waits[1:], strict=False)), "waits never shrink"
    assert max(waits) == RETRY_WAIT_CAP_SECONDS == waits[-1], "and are capped"


async def test_a_temporary_error_carries_the_outage_start_from_attempt_to_attempt() -> None:
    began = time.time() - 60
    err = await _error_of(_env(attempt=4, heartbeat_details=[12, began]), _failing(TimeoutError("slow")))
    assert not err.non_retryable
    assert err.details[0]["outage_since"] == began


async def test_an_outage_longer_than_the_window_hands_over() -> None:
    began = time.time() - 3600  # the default window is 30 minutes
    err = await _error_of(_env(attempt=40, heartbeat_details=[12, began]),
                          _failing(ConnectionRefusedError(111, "refused")))
    assert err.non_retryable
    assert err.type == "TemporaryErrorsExhausted"
    assert "longer than the 30-minute outage window" in err.message
    assert "ConnectionRefusedError" in err.message


async def test_a_stale_attempt_is_retried_soon_and_never_hands_over() -> None:
    err = await _error_of(_env(attempt=3), _failing(StaleAttempt("fence 7 is older than 8")))
    assert not err.non_retryable
    assert err.type == "StaleAttempt"
    assert err.next_retry_delay == timedelta(milliseconds=100)
    assert err.details == ({"class": "stale", "attempt": 3},)


async def test_an_application_error_passes_through_unchanged() -> None:
    mine = ApplicationError("ledger holds 3 of 5", type="VerificationFailed", non_retryable=True)
    assert await _error_of(_env(), _failing(mine)) is mine


async def test_reported_progress_is_heartbeated() -> None:
    env, beats = _beating(heartbeat=0.2)

    @business_step
    async def step() -> int:
        report_progress(5)  # the first report goes out at once
        assert beats == [(5,)]
        await asyncio.sleep(0.15)
        report_progress(9)
        await asyncio.sleep(0.15)
        return 9

    assert await env.run(step) == 9
    assert beats[0] == (5,)
    assert (9,) in beats, "the ticker carries the latest position"
    assert beats[-1] == (9,), "the last beat, as the attempt ends, carries where it got"
    assert beats.index((9,)) > max(i for i, b in enumerate(beats) if b == (5,))


async def test_a_retry_starts_from_the_last_delivered_heartbeat() -> None:
    seen = []

    @business_step
    async def step() -> None:
        seen.append(last_progress())

    await _env(attempt=2, heartbeat_details=[24]).run(step)
    await _env(attempt=1).run(step)
    assert seen == [24, 0]


async def test_a_method_hands_over_after_its_own_outage_window() -> None:
    """Activities are methods of a class that carries the worker's settings: the window is the
    class's, not a global's (activities/resources.py)."""

    class Room:
        outage_window_seconds = 60.0

        @business_step
        async def step(self) -> None:
            raise ConnectionResetError(104, "reset")

    began = time.time() - 120  # longer than this room's 1-minute window, shorter than 30
    env = _env(attempt=5, heartbeat_details=[3, began])
    with pytest.raises(ApplicationError) as caught:
        await env.run(Room().step)
    assert caught.value.non_retryable
    assert "longer than the 1-minute outage window" in caught.value.message


def _wrapped(outer: Exception, inner: Exception) -> Exception:
    try:
        raise outer from inner
    except Exception as exc:  # noqa: BLE001 - handed back as raised
        return exc


@pytest.mark.parametrize("exc", [
    asyncpg.DeadlockDetectedError("deadlock detected"),
    asyncpg.SerializationError("could not serialize access"),
    _wrapped(RuntimeError("posting batch 3"), asyncpg.DeadlockDetectedError("deadlock detected")),
    ExceptionGroup("lanes", [asyncpg.DeadlockDetectedError("deadlock detected")]),
], ids=["deadlock", "serialization", "wrapped-deadlock", "group"])
async def test_a_lost_race_in_postgres_is_retried_never_a_handover(exc: Exception) -> None:
    """Issue 44: a deadlock between two posters failed the step. It is a race the redo wins."""
    err = await _error_of(_env(attempt=3), _failing(exc))
    assert not err.non_retryable
    assert err.details[0]["class"] == "temporary"
    assert "database conflicts with a racing attempt since" in err.message
    assert err.next_retry_delay is not None and err.next_retry_delay.total_seconds() == 4.0
