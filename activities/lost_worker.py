"""After a lost worker, a run's next workflow task goes straight to a live worker.

Temporal sends a run's workflow tasks to the worker that ran its last one (that worker's sticky
queue, where the run is cached) and falls back to the shared queue only after the sticky
schedule-to-start timeout (0.2 s here). When an activity is retried, the worker that ran the
run's last workflow task may be the one that died: the retry's completion then waited out that
timeout before a live worker saw it (0.2 s of the 0.7 s between a killed worker's retry and the
finished run). So a retry first asks Temporal to forget the run's sticky queue
(`ResetStickyTaskQueue`, the call SDKs make when they drop a run from their cache): the next
workflow task goes to the shared queue at once, and whichever worker takes it replays the history
(~0.1 s for a 100,000-invoice night's ~560 events). If the sticky worker was alive after all, that
one replay is the whole cost.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import ResetStickyTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError


async def forget_sticky_worker(client: Client | None) -> None:
    """Call at the start of a retried attempt. Never fails the attempt: it only saves time."""
    if client is None:  # activities run outside a worker (tests of one activity)
        return
    info = activity.info()
    try:
        await client.workflow_service.reset_sticky_task_queue(ResetStickyTaskQueueRequest(
            namespace=info.workflow_namespace,
            execution=WorkflowExecution(workflow_id=info.workflow_id, run_id=info.workflow_run_id),
        ), timeout=timedelta(seconds=2))  # Temporal unreachable: go on without it
    except RPCError as exc:
        activity.logger.info("could not reset the sticky queue of %s: %s", info.workflow_id, exc)
