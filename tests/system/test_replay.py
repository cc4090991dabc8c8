"""Determinism: recorded histories of finished runs replay against today's workflow code.

If a change to the workflow would make old runs fail on replay, these tests fail first. The
stories (crash and resume, each decision on a handover, undo, supplier undo, a scheduled night)
are recorded by one command, `uv run python tests/histories/record.py`; see docs/contributing.md
"Changing workflow code" for when to record again and how `workflow.patched` keeps old runs
replaying.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from recon.domain.errors import UnknownPayloadKey
from recon.runtime.keyring import Keyring, parse_keyring
from recon.runtime.temporal_client import connect, data_converter
from recon.tools.seed import seed_night
from tests.helpers import TEST_PAYLOAD_KEYS, inprocess_worker, settings_for, start
from workflows.registry import WORKFLOWS

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
KEPT = {"crash_and_resume", "handover_resume", "handover_retry", "handover_undo", "gate_resume",
        "undo_run", "undo_supplier", "redo_run", "scheduled_starter", "nightly_completed"}


def _workflow_id(path: Path) -> str:
    """The recorded run's own id: workflow code derives child ids and keys from it."""
    ids_file = path.parent / "workflow_ids.json"
    ids = json.loads(ids_file.read_text()) if ids_file.exists() else {}
    return ids.get(path.stem, path.stem)


# Test keys only (committed on purpose): `encrypted/` holds histories recorded under key A, before
# the rotation that made B current. Every history replays with the rotated keyring {B, A}; the
# plaintext ones pass through the codec unchanged (recorded before encryption was on).
KEY_A = "rot-a:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
KEY_B = "rot-b:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="
BEFORE_ROTATION = parse_keyring([KEY_A], "test")
AFTER_ROTATION = parse_keyring([KEY_B, KEY_A, *filter(None, TEST_PAYLOAD_KEYS.split(","))], "test")


def _replayer(keyring: Keyring | None = AFTER_ROTATION) -> Replayer:
    return Replayer(workflows=WORKFLOWS, data_converter=data_converter(keyring, "default"))


# Today's recordings, and those recorded by earlier workflow code (before decisions named their
# handover, resume re-ran a failed step, undo raised a generation, and undo and redo checked a
# signed request): both must replay, which is
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


def _encodings(node: object) -> set[tuple[str, str]]:
    """(encoding, key id) of every payload in a history's JSON (metadata values are base64)."""
    found: set[tuple[str, str]] = set()
    if isinstance(node, dict):
        metadata = node.get("metadata")
        if isinstance(metadata, dict) and "encoding" in metadata:
            found.add((base64.b64decode(metadata["encoding"]).decode(),
                       base64.b64decode(metadata.get("encryption-key-id", "")).decode()))
        for key, value in node.items():
            # Search attributes are indexed by the server and never encoded; a patch marker's
            # data (the patch id, written by the SDK's core) is not passed to codecs either.
            if key not in ("searchAttributes", "patch-data"):
                found |= _encodings(value)
    elif isinstance(node, list):
        for value in node:
            found |= _encodings(value)
    return found


@pytest.mark.slow  # a whole night on an in-process worker, encrypted
async def test_a_history_recorded_before_a_rotation_replays_after_it(
        pool: asyncpg.Pool, client: Client, night) -> None:
    """Recorded with keyring {A}; B becomes current; the history (which can never be
    re-encrypted) replays with {B, A}, and without A it fails naming the missing key."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=5)
    settings = settings_for(queue, payload_keyring=BEFORE_ROTATION)
    sealed_client = await connect(settings)
    async with inprocess_worker(settings):
        handle = await start(sealed_client, settings, day, warehouse)
        await handle.result()
    history = await handle.fetch_history()
    raw = history.to_json()
    assert _encodings(json.loads(raw)) == {("binary/encrypted", "rot-a")}
    result = await _replayer(AFTER_ROTATION).replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure
    only_b = parse_keyring([KEY_B], "test")
    without_a = await _replayer(only_b).replay_workflow(history, raise_on_replay_failure=False)
    assert without_a.replay_failure is not None  # (its message travels encoded, sealed with B)
    start_input = history.events[0].workflow_execution_started_event_attributes.input.payloads
    with pytest.raises(UnknownPayloadKey, match=r"key 'rot-a', which is not in the keyring "
                                                r"\(known: rot-b\)"):
        await data_converter(only_b, "default").decode(start_input)
    if os.environ.get("RECORD_HISTORIES"):
        target = HISTORIES / "encrypted" / "nightly_completed_key_a.json"
        target.parent.mkdir(exist_ok=True)
        target.write_text(raw)
        (target.parent / "workflow_ids.json").write_text(
            json.dumps({target.stem: handle.id}, indent=1) + "\n")
