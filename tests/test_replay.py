"""Determinism: recorded histories of finished runs replay against today's workflow code.

If a change to the workflow would make old runs fail on replay, these tests fail first. To
record the histories again after an intended change: RECORD_HISTORIES=1 uv run pytest
tests/test_replay.py (and say so in the commit).
"""

from __future__ import annotations

import os
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from recon.seed import seed_night
from tests.helpers import inprocess_worker, settings_for, start
from workflows.registry import WORKFLOWS

HISTORIES = Path(__file__).parent / "histories"


def _replayer() -> Replayer:
    return Replayer(workflows=WORKFLOWS, data_converter=pydantic_data_converter)


@pytest.mark.parametrize("path", sorted(HISTORIES.glob("*.json")), ids=lambda p: p.stem)
async def test_recorded_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    result = await _replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


def test_there_is_a_recorded_history() -> None:
    assert list(HISTORIES.glob("*.json")), "tests/histories/ must hold at least one history"


@pytest.mark.slow  # a whole night on an in-process worker
async def test_a_fresh_run_replays(pool: asyncpg.Pool, client: Client, night) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=5)
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await handle.result()
    history = await handle.fetch_history()
    result = await _replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure
    if os.environ.get("RECORD_HISTORIES"):
        (HISTORIES / "nightly_completed.json").write_text(history.to_json())
