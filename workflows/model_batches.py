"""Step 2 in batch mode, from the workflow's side: submit, wait, read; then the usual step asks
interactively only what the batches did not answer (docs/model-calls.md "Batch mode").

The wait is one activity retried at a fixed interval (`RECON_MODEL_BATCH_POLL`, backoff 1.0): the
samples' "infrequent polling" pattern. An attempt that finds the batch still running fails, and
Temporal schedules the next one after the interval; failed attempts of a retried activity are not
events in the history, so a wait of hours adds a handful of events, and no worker slot is held
between two looks. Workflow code: deterministic, no I/O of its own.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.model_batches import ModelBatchActivities
    from recon.domain import steps
    from recon.domain.models import Count, ModelBatchGroup, ModelBatchNight, Progress
    from workflows import display
    from workflows.policies import MODEL_TIMEOUT

LOOK_TIMEOUT = timedelta(minutes=2)  # one look (and a cancel): a worker killed in it costs this much
WAIT_AT_MOST = timedelta(hours=26)  # the provider's 24 h window, and room to read its end


async def batches_first(act, wf: str, poll_seconds: float, progress: Progress) -> Count:
    """Submit the night's batches, wait for each, read each; the count of what they answered."""
    keys = await act(ModelBatchActivities.submit_model_batches, ModelBatchNight(workflow_id=wf),
                     MODEL_TIMEOUT)
    interval = timedelta(seconds=poll_seconds)
    if keys:  # the Web UI's details (no event): `recon status` counts the answers as they come
        workflow.set_current_details(
            f"**extract_lines**: waiting for the model's batch ({len(keys)} "
            f"{'batch' if len(keys) == 1 else 'batches'}; `recon status` shows N of M answered)")
    total = Count(count=0, parked=0)

    async def one(key: str) -> None:
        group = ModelBatchGroup(workflow_id=wf, key=key)
        await workflow.execute_activity_method(
            ModelBatchActivities.wait_for_model_batch, group,
            start_to_close_timeout=LOOK_TIMEOUT, schedule_to_close_timeout=WAIT_AT_MOST,
            retry_policy=RetryPolicy(initial_interval=interval, backoff_coefficient=1.0,
                                     maximum_interval=interval, maximum_attempts=0,
                                     non_retryable_error_types=["ModelUnavailable"]),
            summary=f"waiting for the model's batch {key}",
        )
        done = await act(ModelBatchActivities.read_model_batch, group, MODEL_TIMEOUT)
        total.count += done.count
        total.parked += done.parked
        progress.extracted = total.count
        display.show_step(steps.EXTRACT_LINES.name, progress)

    await asyncio.gather(*(one(key) for key in keys))
    return total
