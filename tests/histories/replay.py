"""The kept histories and the Replayer they replay with: no server, today's workflow code.

Used by tests/workflows/test_histories.py (every kept history, in the fast tier) and by
tests/system/test_replay.py (fresh runs, recorded and replayed on the spot).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from temporalio.worker import Replayer

from recon.runtime.keyring import Keyring, parse_keyring
from recon.runtime.temporal_client import data_converter
from tests.helpers import TEST_PAYLOAD_KEYS
from workflows.registry import WORKFLOWS

HISTORIES = Path(__file__).resolve().parent

# Test keys only (committed on purpose): `encrypted/` holds histories recorded under key A, before
# the rotation that made B current. Every history replays with the rotated keyring {B, A}; the
# plaintext ones pass through the codec unchanged (recorded before encryption was on).
KEY_A = "rot-a:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
KEY_B = "rot-b:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="
BEFORE_ROTATION = parse_keyring([KEY_A], "test")
AFTER_ROTATION = parse_keyring([KEY_B, KEY_A, *filter(None, TEST_PAYLOAD_KEYS.split(","))], "test")


def kept_histories() -> list[Path]:
    """Every recorded history: today's (top level) and each earlier generation's folder."""
    return sorted(p for p in HISTORIES.glob("**/*.json") if p.stem != "workflow_ids")


def workflow_id(path: Path) -> str:
    """The recorded run's own id: workflow code derives child ids and keys from it."""
    ids_file = path.parent / "workflow_ids.json"
    ids = json.loads(ids_file.read_text()) if ids_file.exists() else {}
    return ids.get(path.stem, path.stem)


def replayer(keyring: Keyring | None = AFTER_ROTATION) -> Replayer:
    return Replayer(workflows=WORKFLOWS, data_converter=data_converter(keyring, "default"))


def recorded_patches(path: Path) -> set[str]:
    """The ids of the patch markers a history recorded (marker data is never encoded)."""
    found = set()
    for event in json.loads(path.read_text())["events"]:
        marker = event.get("markerRecordedEventAttributes", {})
        if marker.get("markerName") == "core_patch":
            for payload in marker["details"]["patch-data"]["payloads"]:
                found.add(json.loads(base64.b64decode(payload["data"]))["id"])
    return found
