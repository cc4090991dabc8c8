"""Step 2 from the workflow's side: many extraction activities, few enough for any night.

A 100,000-invoice night is at most MAX_EXTRACT_ACTIVITIES activities (the batch grows with the
night), EXTRACT_WAVE in flight at a time. Workflow code: deterministic, no I/O of its own.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.extraction import ExtractionActivities
    from recon.domain import steps
    from recon.domain.models import Count, ExtractBatch, Progress
    from workflows import display
    from workflows.model_batches import batches_first
    from workflows.patches import EXTRACT_FEWER, EXTRACT_WINDOW, MODEL_BATCHES
    from workflows.policies import MODEL_TIMEOUT

# At most this many activities a night: each costs the engine ~10-20 ms of CPU (schedule, start,
# heartbeats, completion, a workflow task, on the server and in the worker), so 50 keep a
# 100,000-invoice night's engine cost near 1 s (docs/design.md §8).
MAX_EXTRACT_ACTIVITIES = 50
MAX_EXTRACT_ACTIVITIES_BEFORE_FEWER = 100  # what runs started before EXTRACT_FEWER replay with
MAX_EXTRACT_ACTIVITIES_BEFORE_WINDOW = 400  # what runs started before EXTRACT_WINDOW replay with
EXTRACT_WAVE = 16  # extraction activities in flight at once
# Patches (workflows/patches.py): EXTRACT_WINDOW, 100 batches at most, the next one starts as soon
# as one finishes; EXTRACT_FEWER, 50 batches at most (a 100k night: 2,000 invoices each). Still 16
# in flight until the last few: the offline parser is bound by two cores long before that, a paid
# model by its pace.

Act = Callable[[Callable[..., Any], Any, timedelta], Awaitable[Any]]


async def extract_all(act: Act, wf: str, invoices: int, extract_batch_size: int,
                      progress: Progress, model_mode: str, poll_seconds: float) -> Count:
    """Many model calls in parallel, in batches: few enough activities for any night. In batch
    mode the provider's batch interface answers first; these ask only what it did not."""
    if model_mode == "batch" and workflow.patched(MODEL_BATCHES):
        batched = await batches_first(act, wf, poll_seconds, progress)
        rest = await _extract_all(act, wf, invoices, extract_batch_size, progress)
        return Count(count=batched.count + rest.count, parked=batched.parked + rest.parked)
    return await _extract_all(act, wf, invoices, extract_batch_size, progress)


async def _extract_all(act: Act, wf: str, invoices: int, extract_batch_size: int,
                       progress: Progress) -> Count:
    windowed = workflow.patched(EXTRACT_WINDOW)
    if not windowed:
        most = MAX_EXTRACT_ACTIVITIES_BEFORE_WINDOW
    elif workflow.patched(EXTRACT_FEWER):
        most = MAX_EXTRACT_ACTIVITIES
    else:
        most = MAX_EXTRACT_ACTIVITIES_BEFORE_FEWER
    size = max(extract_batch_size, math.ceil(invoices / most))
    batches = [
        ExtractBatch(workflow_id=wf, first_seq=first, last_seq=min(first + size - 1, invoices))
        for first in range(1, invoices + 1, size)
    ]
    if windowed:
        return await _in_window(act, batches, progress)
    total = Count(count=0, parked=0)
    for start in range(0, len(batches), EXTRACT_WAVE):
        wave = batches[start:start + EXTRACT_WAVE]
        # Let the whole wave settle before failing: a retry must never overlap a batch that
        # is still calling the model, or an invoice could be paid for twice.
        results = await asyncio.gather(
            *(act(ExtractionActivities.extract_lines, b, MODEL_TIMEOUT) for b in wave),
            return_exceptions=True,
        )
        for r in results:
            if isinstance(r, BaseException):
                raise r
        for r in results:
            total.count += r.count
            total.parked += r.parked
        progress.extracted = total.count
        display.show_step(steps.EXTRACT_LINES.name, progress)
    return total


async def _in_window(act: Act, batches: list[ExtractBatch], progress: Progress) -> Count:
    """EXTRACT_WAVE batches in flight; the next starts as soon as one finishes (no wave waits
    for its slowest batch). After a failure no new batch starts, and the step fails only once
    every batch in flight has settled: a retry never overlaps a batch that is still calling the
    model, so no invoice is paid for twice."""
    total = Count(count=0, parked=0)
    room = asyncio.Semaphore(EXTRACT_WAVE)  # FIFO waiters: deterministic under replay
    failures: list[BaseException] = []

    async def one(batch: ExtractBatch) -> None:
        async with room:
            if failures:
                return
            try:
                done = await act(ExtractionActivities.extract_lines, batch, MODEL_TIMEOUT)
            except BaseException as exc:  # noqa: B036 - kept, raised once all have settled
                failures.append(exc)
                return
            total.count += done.count
            total.parked += done.parked
            progress.extracted = total.count
            display.show_step(steps.EXTRACT_LINES.name, progress)

    await asyncio.gather(*(one(b) for b in batches))
    if failures:
        raise failures[0]
    return total
