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
