"""Determinism: every kept history of a finished run replays against today's workflow code, on a
Replayer (no server), so the fast tier fails first when a change would break old runs.

The stories (crash and resume, each decision on a handover, undo, supplier undo, a redo, a
scheduled night) are recorded by one command, `uv run python tests/histories/record.py`; see
README "Changing workflow code" for when to record again, and workflows/patches.py for the
`workflow.patched` ids that keep older recordings replaying. Fresh runs recorded and replayed on
the spot (plain and encrypted) are tests/system/test_replay.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from tests.histories.replay import HISTORIES, kept_histories, recorded_patches, replayer, workflow_id
from workflows.patches import PATCHES

KEPT = {"crash_and_resume", "handover_resume", "handover_retry", "handover_undo", "gate_resume",
        "undo_run", "undo_supplier", "redo_run", "scheduled_starter", "nightly_completed",
        "sources_night"}


# Today's recordings, and those recorded by earlier workflow code (before decisions named their
# handover, resume re-ran a failed step, undo raised a generation, and undo and redo checked a
# signed request): both must replay, which is
# what the `workflow.patched` guards in workflows/ are for.
@pytest.mark.parametrize("path", kept_histories(),
                         ids=lambda p: str(p.relative_to(HISTORIES).with_suffix("")))
async def test_recorded_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(workflow_id(path), path.read_text())
    result = await replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


def test_every_story_has_a_recorded_history() -> None:
    kept = {p.stem for p in HISTORIES.glob("*.json")} - {"workflow_ids"}
    assert KEPT <= kept, f"missing: {sorted(KEPT - kept)}; run tests/histories/record.py"


def test_every_generation_is_replayed() -> None:
    """The top level and each earlier generation's folder (before-*, encrypted) hold histories
    that the replay above picks up."""
    folders = {p.parent.relative_to(HISTORIES).as_posix() for p in kept_histories()}
    on_disk = {p.name for p in HISTORIES.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == {".", *on_disk}, f"folders with no history replayed: {on_disk - folders}"


def test_every_patch_a_kept_history_recorded_is_listed() -> None:
    """A history's patch marker names an id workflows/patches.py still lists: a respelled or
    dropped id would send that history down the branch of runs recorded before the patch."""
    listed = {p.id for p in PATCHES}
    stray = {f"{path.relative_to(HISTORIES)}: {sorted(ids - listed)}" for path in kept_histories()
             if (ids := recorded_patches(path)) - listed}
    assert not stray, f"patch ids recorded in kept histories but not listed: {sorted(stray)}"


def test_the_crash_history_holds_a_crash() -> None:
    """The crash story really lost a worker mid-step: step 7 ran a second attempt."""
    events = json.loads((HISTORIES / "crash_and_resume.json").read_text())["events"]
    attempts = [e["activityTaskStartedEventAttributes"].get("attempt", 1) for e in events
                if "activityTaskStartedEventAttributes" in e]
    assert max(attempts) >= 2


def test_the_sources_history_fetched_again_after_a_kill() -> None:
    """The sources story pins the patched step 1: `fetch_sources` runs before `fetch_invoices`,
    and its first attempt died mid-fetch (a worker killed), so a second attempt finished it."""
    events = json.loads((HISTORIES / "sources_night.json").read_text())["events"]
    scheduled = {e["eventId"]: e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
                 for e in events if "activityTaskScheduledEventAttributes" in e}
    assert list(scheduled.values())[:2] == ["fetch_sources", "fetch_invoices"]
    attempts = [e["activityTaskStartedEventAttributes"].get("attempt", 1) for e in events
                if "activityTaskStartedEventAttributes" in e
                and scheduled[e["activityTaskStartedEventAttributes"]["scheduledEventId"]] == "fetch_sources"]
    assert max(attempts) >= 2


def test_the_batch_history_waited_and_survived_a_kill_after_the_create() -> None:
    """The batch story pins step 2's batch branch: submit (its first attempt killed after the
    create, before the record), one wait however many looks, one read, in that order."""
    events = json.loads((HISTORIES / "batch_night.json").read_text())["events"]
    scheduled = {e["eventId"]: e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
                 for e in events if "activityTaskScheduledEventAttributes" in e}
    batch = [name for name in scheduled.values() if "model_batch" in name]
    assert batch == ["submit_model_batches", "wait_for_model_batch", "read_model_batch"]
    attempts: dict[str, int] = {}
    for e in events:
        if "activityTaskStartedEventAttributes" in e:
            started = e["activityTaskStartedEventAttributes"]
            name = scheduled[started["scheduledEventId"]]
            attempts[name] = max(attempts.get(name, 1), started.get("attempt", 1))
    assert attempts["submit_model_batches"] >= 2  # the killed first attempt
    assert attempts["wait_for_model_batch"] >= 2  # several looks, one activity in the history
