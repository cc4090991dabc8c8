"""Fences for activities: before an attempt takes over a store, it makes sure it is the attempt
Temporal considers live.

A worker that was frozen (SIGSTOP, a long GC pause, a stopped VM) may wake up holding tasks that
Temporal handed to its open polls and has long since given to another worker. Such an attempt
must not take a new fencing token, or the live attempt's next write would be refused. So the
attempt asks Temporal first (is the workflow run still open, and is this activity's pending
attempt this one?), then asks Postgres for the token, which also refuses an earlier activity or
attempt of the same run (recon/store/fences.py). Every write then checks the token in its own
transaction, as before.
"""

from __future__ import annotations

import asyncpg
from temporalio import activity
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import WorkflowExecutionStatus
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest
from temporalio.client import Client

from recon.domain.errors import StaleAttempt
from recon.store.fences import Fence, Holder, take_fence


def _holder() -> Holder:
    info = activity.info()
    seq = int(info.activity_id) if info.activity_id.isdigit() else 0
    return Holder(run_id=info.workflow_run_id, seq=seq, attempt=info.attempt)


async def ensure_live_attempt(client: Client | None) -> None:
    """Raise StaleAttempt unless Temporal still waits for exactly this attempt."""
    if client is None:  # activities run outside a worker (tests of one activity)
        return
    info = activity.info()
    described = await client.workflow_service.describe_workflow_execution(
        DescribeWorkflowExecutionRequest(
            namespace=info.workflow_namespace,
            execution=WorkflowExecution(workflow_id=info.workflow_id, run_id=info.workflow_run_id),
        )
    )
    status = described.workflow_execution_info.status
    if status != WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING:
        raise StaleAttempt(f"{info.workflow_id} run {info.workflow_run_id} is no longer open: "
                           "this attempt is left over from before and writes nothing")
    for pending in described.pending_activities:
        if pending.activity_id == info.activity_id:
            if pending.attempt != info.attempt:
                raise StaleAttempt(
                    f"{info.activity_type} attempt {info.attempt} was superseded by attempt "
                    f"{pending.attempt}: it writes nothing")
            return
    raise StaleAttempt(f"{info.activity_type} attempt {info.attempt} is no longer pending in "
                       f"{info.workflow_id}: it writes nothing")


async def take(client: Client | None, pool: asyncpg.Pool, scope: str) -> Fence:
    """The fence for this attempt: live at Temporal, and newest in Postgres."""
    await ensure_live_attempt(client)
    return await take_fence(pool, scope, _holder())
