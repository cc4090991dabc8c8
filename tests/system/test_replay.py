"""Determinism: recorded histories of finished runs replay against today's workflow code.

If a change to the workflow would make old runs fail on replay, these tests fail first. The
stories (crash and resume, each decision on a handover, undo, supplier undo, a scheduled night)
are recorded by one command, `uv run python tests/histories/record.py`; see README "Changing
workflow code" for when to record again and how `workflow.patched` keeps old runs replaying.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from recon.documents.seed import seed_night
from tests.helpers import inprocess_worker, settings_for, start
from workflows.registry import WORKFLOWS

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
KEPT = {"crash_and_resume", "handover_resume", "handover_retry", "handover_undo", "gate_resume",
        "undo_run", "undo_supplier", "scheduled_starter", "nightly_completed"}


def _workflow_id(path: Path) -> str:
    """The recorded run's own id: workflow code derives child ids and keys from it."""
    ids_file = path.parent / "workflow_ids.json"
    ids = json.loads(ids_file.read_text()) if ids_file.exists() else {}
    return ids.get(path.stem, path.stem)


def _replayer() -> Replayer:
    return Replayer(workflows=WORKFLOWS, data_converter=pydantic_data_converter)


# Today's recordings, and those recorded by earlier workflow code (before decisions named their
# handover, resume re-ran a failed step and undo raised a generation): both must replay, which is
# what the `workflow.patched` guards in workflows/ are for.
@pytest.mark.parametrize("path", sorted(p for p in HISTORIES.glob("**/*.json")
                                        if p.stem != "workflow_ids"),
                         ids=lambda p: str(p.relative_to(HISTORIES).with_suffix("")))
async def test_recorded_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(_workflow_id(path), path.read_text())
    result = await _replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


def test_every_story_has_a_recorded_history() -> None:
    kept = {p.stem for p in HISTORIES.glob("*.json")} - {"workflow_ids"}
    assert KEPT <= kept, f"missing: {sorted(KEPT - kept)}; run tests/histories/record.py"


def test_the_crash_history_holds_a_crash() -> None:
    """The crash story really lost a worker mid-step: step 7 ran a second attempt."""
    events = json.loads((HISTORIES / "crash_and_resume.json").read_text())["events"]
    attempts = [e["activityTaskStartedEventAttributes"].get("attempt", 1) for e in events
                if "activityTaskStartedEventAttributes" in e]
    assert max(attempts) >= 2


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
