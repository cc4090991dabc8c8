"""The one way this project connects to Temporal: pydantic payloads, a clear error if it is down.

Connection settings go through `temporalio.envconfig`, so the same worker runs against a local
dev server, a self-hosted cluster or Temporal Cloud: TEMPORAL_API_KEY (API key), or
TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH (mTLS), TEMPORAL_TLS_*,
TEMPORAL_GRPC_META_*, TEMPORAL_PROFILE and a TOML profile file (TEMPORAL_CONFIG_FILE) are all read
by the SDK. The address and namespace are ours (TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE, or
`.recon/env`), so `recon dev` keeps working without any profile.

Every client the product makes (worker, CLI, starter, schedules, chaos, demo, benches) comes from
here, so all of them read and write payloads the same way: with a keyring set
(RECON_PAYLOAD_KEYS / RECON_PAYLOAD_KEYS_FILE) every payload is AES-GCM encrypted for the
client's namespace and failure messages and stack traces travel encoded too; without one,
payloads are JSON as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes
from temporalio.envconfig import ClientConfig
from temporalio.runtime import Runtime

from recon.domain.errors import TemporalUnavailable
from recon.runtime.codec import EncryptionCodec
from recon.runtime.config import Settings
from recon.runtime.keyring import Keyring


def data_converter(keyring: Keyring | None, namespace: str) -> DataConverter:
    """Pydantic payloads, sealed for `namespace` when there is a keyring. The replay tests and
    anything that decodes a payload by hand use this too, never the SDK's converter directly."""
    if keyring is None:
        return pydantic_data_converter
    return dataclasses.replace(
        pydantic_data_converter, payload_codec=EncryptionCodec(keyring, namespace),
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


def connect_config(settings: Settings) -> dict[str, Any]:
    """Client.connect keyword arguments: envconfig's credentials and TLS, our address."""
    try:
        config: dict[str, Any] = dict(ClientConfig.load_client_connect_config())
    except Exception as exc:  # a broken profile file or a missing certificate file
        raise TemporalUnavailable(f"Temporal connection settings are unusable: {exc}") from exc
    config["target_host"] = settings.temporal_address
    config["namespace"] = settings.temporal_namespace
    return config


async def connect(settings: Settings, runtime: Runtime | None = None) -> Client:
    config = connect_config(settings)
    try:
        return await Client.connect(
            **config,
            data_converter=data_converter(settings.payload_keyring, config["namespace"]),
            **({"runtime": runtime} if runtime is not None else {}),
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
