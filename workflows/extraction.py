"""Step 2 from the workflow's side: many extraction activities, in waves, few enough for any night.

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
    from activities.extract_lines import ExtractionActivities
    from recon import steps
    from recon.models import Count, ExtractBatch, Progress
    from workflows import display
    from workflows.policies import MODEL_TIMEOUT

MAX_EXTRACT_ACTIVITIES = 400  # keeps a 100,000-invoice night far inside the history limits
EXTRACT_WAVE = 16  # extraction activities in flight at once

Act = Callable[[Callable[..., Any], Any, timedelta], Awaitable[Any]]


async def extract_all(act: Act, wf: str, invoices: int, extract_batch_size: int,
                      progress: Progress) -> Count:
    """Many model calls in parallel, in batches: few enough activities for any night."""
    size = max(extract_batch_size, math.ceil(invoices / MAX_EXTRACT_ACTIVITIES))
    batches = [
        ExtractBatch(workflow_id=wf, first_seq=first, last_seq=min(first + size - 1, invoices))
        for first in range(1, invoices + 1, size)
    ]
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
