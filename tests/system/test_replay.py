"""Determinism on fresh runs: a night run now replays at once, and one recorded under key A replays
after the rotation to key B (and not without A). Every kept history in tests/histories/ replays
in the fast tier: tests/workflows/test_histories.py; see docs/contributing.md "Changing workflow
code" for when to record them again and how `workflow.patched` (workflows/patches.py) keeps old
runs replaying.
"""

from __future__ import annotations

import base64
import json
import os

import asyncpg
import pytest
from temporalio.client import Client

from recon.domain.errors import UnknownPayloadKey
from recon.runtime.keyring import parse_keyring
from recon.runtime.temporal_client import connect, data_converter
from recon.tools.seed import seed_night
from tests.helpers import inprocess_worker, settings_for, start
from tests.histories.replay import AFTER_ROTATION, BEFORE_ROTATION, HISTORIES, KEY_B, replayer


@pytest.mark.slow  # a whole night on an in-process worker
async def test_a_fresh_run_replays(pool: asyncpg.Pool, client: Client, night) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=5)
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await handle.result()
    history = await handle.fetch_history()
    result = await replayer().replay_workflow(history, raise_on_replay_failure=False)
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
    result = await replayer(AFTER_ROTATION).replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure
    only_b = parse_keyring([KEY_B], "test")
    without_a = await replayer(only_b).replay_workflow(history, raise_on_replay_failure=False)
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
