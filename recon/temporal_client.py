"""The one way this project connects to Temporal: pydantic payloads, a clear error if it is down."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from recon.config import Settings


class TemporalUnavailable(RuntimeError):
    """Temporal cannot be reached; one line for the user."""


async def connect(settings: Settings) -> Client:
    try:
        return await Client.connect(
            settings.temporal_address,
            namespace=settings.temporal_namespace,
            data_converter=pydantic_data_converter,
        )
    except RuntimeError as exc:
        raise TemporalUnavailable(
            f"cannot reach Temporal at {settings.temporal_address}: {exc}. "
            "Start it with `recon dev` or set TEMPORAL_ADDRESS"
        ) from exc


async def has_workers(client: Client, namespace: str, task_queue: str) -> bool:
    """Is any worker polling this task queue now? (A run started with none just waits.)"""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return len(response.pollers) > 0
