"""Timeouts and retry rules per step kind (docs/design.md §1-2), in one place.

Temporal's own retry count is only a backstop against a worker that keeps dying: the activities
themselves decide when a temporary error has been retried enough (activities/step.py) and mark
unknown errors non-retryable, which hands the run to a person.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    # A backstop only (a worker that dies on every attempt): temporary errors are retried for
    # the outage window and then stopped by the activity itself (activities/step.py).
    maximum_attempts=200,
)

READ_TIMEOUT = timedelta(minutes=10)
MODEL_TIMEOUT = timedelta(minutes=30)
WRITE_TIMEOUT = timedelta(hours=1)
