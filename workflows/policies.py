"""Timeouts and retry rules per step kind (docs/design.md §1-2), in one place.

Temporal's own retry count is only a backstop against a worker that keeps dying: the activities
themselves decide when a temporary error has been retried enough (activities/step.py) and mark
unknown errors non-retryable, which hands the run to a person.

Two kinds of retry, two waits. The policy's wait below applies only where no error says
otherwise: a lost worker (heartbeat or start-to-close timeout). Nothing is wrong with the work
then, so the retry starts after 0.1 s on whichever worker is alive. A classified temporary error
(a 429, a dropped connection) carries its own growing wait in the error itself
(`next_retry_delay`, recon/domain/errors.py), so the service that pushed back gets time to recover.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=100),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    # A backstop only (a worker that dies on every attempt): temporary errors are retried for
    # the outage window and then stopped by the activity itself (activities/step.py).
    maximum_attempts=200,
)

READ_TIMEOUT = timedelta(minutes=10)
MODEL_TIMEOUT = timedelta(minutes=30)
WRITE_TIMEOUT = timedelta(hours=1)

# Step 2 (extraction, MODEL_TIMEOUT) is the one step that computes in the worker: up to 50 of its
# activities parse and encode on one event loop, so on a starved machine (load 13 on 2 cores) the
# loop stalled past a 1 s heartbeat timeout and 1-5 of a 100,000-invoice night's 50 attempts were
# retried for nothing; at 2 s, none. Every other step waits on Postgres or a service, its loop
# free, and keeps the run's own (shorter) timeout, so a lost worker is noticed soon
# (docs/operations.md, "Recovery").
COMPUTING_STEP_HEARTBEAT = timedelta(seconds=2)


def step_heartbeat(heartbeat_seconds: float, start_to_close: timedelta) -> timedelta:
    """The heartbeat timeout of one activity: the run's, at least 2 s for a computing step."""
    heartbeat = timedelta(seconds=heartbeat_seconds)
    if start_to_close == MODEL_TIMEOUT:
        return max(heartbeat, COMPUTING_STEP_HEARTBEAT)
    return heartbeat
