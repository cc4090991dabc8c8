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
