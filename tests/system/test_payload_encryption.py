"""Financial data never reaches Temporal in the clear: a night run with a key, handed over at the
gate, decided with a note, and undone with a reason, read back from Temporal by its own CLI
*without* the codec (what a cluster operator sees), then through the codec server (what people
with the token see)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
import subprocess
import urllib.request

import asyncpg
import pytest
from temporalio.client import Client

from recon.ops.approvers import ensure_tool_approver, load_key, signed_decision
from recon.runtime.codec_server import CodecServerThread, CodecService
from recon.runtime.embedded import temporal_binary
from recon.runtime.keyring import new_key_line, parse_keyring
from recon.runtime.temporal_client import connect
from recon.tools.seed import seed_night
from tests.approvers import key_path
from tests.conftest import Stack
from tests.helpers import recon_cli, settings_for, start, wait_for

TOKEN = "codec-test-token"
AMOUNT = re.compile(r"₹[\d,]+(?:\.\d\d)?")


def _readable(text: str) -> str:
    """The text, plus every base64 value in it decoded: a plaintext payload shown as base64 must
    not slip past the search."""
    pieces = [text]
    for value in re.findall(r'"([A-Za-z0-9+/]{8,}={0,2})"', text):
        try:
            pieces.append(base64.b64decode(value, validate=True).decode("utf-8", "replace"))
        except (binascii.Error, ValueError):
            continue
    return "\n".join(pieces)


def _temporal(stack: Stack, *args: str, codec: CodecServerThread | None = None) -> str:
    command = [temporal_binary(), *args, "--address", stack.temporal_address, "--output", "json"]
    if codec is not None:
        command += ["--codec-endpoint", codec.url(), "--codec-auth", f"Bearer {TOKEN}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _found(needles: set[str], text: str) -> set[str]:
    readable = _readable(text)
    escaped = {n: json.dumps(n)[1:-1] for n in needles}  # ₹ as \u20b9 in JSON text
    return {n for n in needles if n in readable or escaped[n] in readable}


async def test_the_raw_history_and_memo_hold_no_supplier_amount_or_note(
    pool: asyncpg.Pool, stack: Stack, night, spawn_worker
) -> None:
    day, warehouse, queue = night
    key = new_key_line("night-1")
    keyring = parse_keyring([key], "test")
    await seed_night(pool, day, warehouse, invoices=40, mismatches=5)
    settings = settings_for(queue, payload_keyring=keyring)
    client: Client = await connect(settings)
    spawn_worker(queue, RECON_PAYLOAD_KEYS=key, RECON_GATE_MAX_TOTAL_PAISE="100")  # its gate holds
    handle = await start(client, settings, day, warehouse)

    async def waiting() -> bool:
        try:
            return (await handle.query("progress"))["status"] == "AwaitingDecision"
        except Exception:  # noqa: BLE001 - not started yet
            return False

    await wait_for(waiting, 90, "the gate's handover")
    suppliers = await pool.fetch(
        "SELECT DISTINCT s.supplier_id, s.name FROM ledger_entries l "
        "JOIN suppliers s USING (supplier_id) WHERE l.workflow_id = $1", handle.id)
    assert suppliers, "the night posted adjustments"
    names = {r["name"] for r in suppliers}
    note = f"prices checked with {sorted(names)[0]} on the phone"
    # A decider with a name of its own (a short one like "asha" could turn up by chance in
    # decoded bytes), signing as `recon approve` does.
    decider_key = stack.state / "keys" / "asha-verma.pem"
    await ensure_tool_approver(pool, "asha-verma", "asha.verma@distributor.example", decider_key,
                               admin_key=load_key(key_path(stack.state, "asha")))
    await handle.execute_update("decide", await signed_decision(
        pool, load_key(decider_key), run=handle.id, handover_no=1, decision="resume",
        by="asha-verma", note=note, park=[]))
    summary = await handle.result()
    reason = "supplier credit notes arrived for the whole night"
    undone = recon_cli(stack.env(RECON_PAYLOAD_KEYS=key, RECON_TASK_QUEUE=queue,
                                 RECON_APPROVER_KEY=str(decider_key)),
                       "undo", handle.id, "--reason", reason, "--by", "asha-verma", timeout=120)
    assert undone.returncode == 0, undone.stderr
    undo_id = f"undo-{handle.id}"
    await client.get_workflow_handle(undo_id).result()

    stored = await pool.fetchrow("SELECT note, error_message FROM handovers WHERE workflow_id = $1",
                                 handle.id)
    amounts = set(AMOUNT.findall(stored["note"] + stored["error_message"]))
    memo = await (await handle.describe()).memo()
    total = summary.adjustment_total_paise
    assert memo["headline"]["adjusted"] in summary.in_words, "the memo says it in ₹, sealed"
    assert amounts and total > 0
    ids = {r["supplier_id"] for r in suppliers}
    secrets = names | ids | amounts | {note, reason, "asha-verma", stored["error_message"][:40]}

    raw = "\n".join(_temporal(stack, "workflow", verb, "-w", wid)
                    for wid in (handle.id, undo_id) for verb in ("show", "describe"))
    assert _found(secrets, raw) == set(), "readable without the codec"
    assert not re.search(rf"(?<![\d.]){total}(?!\d)", _readable(raw)), "the night's total"
    assert "binary/encrypted" in _readable(raw)

    service = CodecService(keyring, TOKEN, frozenset({"http://localhost:8233"}))
    codec = CodecServerThread(service).start()
    try:
        through = "\n".join(_temporal(stack, "workflow", verb, "-w", wid, codec=codec)
                            for wid in (handle.id, undo_id) for verb in ("show", "describe"))
        assert {note, reason, "asha-verma"} | amounts | ids <= _found(secrets, through), \
            "the same output through the codec server reads as before"
        # The Web UI's call: the raw memo's payloads, POST /decode, read as the SDK reads them.
        described = json.loads(_temporal(stack, "workflow", "describe", "-w", handle.id,
                                         "--raw"))
        fields = described["workflowExecutionInfo"]["memo"]["fields"]
        indexed = described["workflowExecutionInfo"]["searchAttributes"]["indexedFields"]
        # Ours, and two the SDK and server add: the patch ids and the workers' build ids.
        assert set(indexed) <= {"ReconStatus", "ReconStep", "ReconWarehouse", "ReconDate",
                                "TemporalChangeVersion", "BuildIds"}, "search attributes: labels only"
        assert base64.b64decode(indexed["ReconWarehouse"]["data"]) == f'"{warehouse}"'.encode()
        request = urllib.request.Request(
            f"{codec.url()}/decode", method="POST",
            data=json.dumps({"payloads": list(fields.values())}).encode(),
            headers={"Authorization": f"Bearer {TOKEN}", "X-Namespace": "default",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            opened = json.loads(response.read())["payloads"]
        decoded = {name: json.loads(base64.b64decode(p["data"])) if p.get("data") else None
                   for name, p in zip(fields, opened, strict=True)}  # None: binary/null
        assert decoded == {name: value for name, value in memo.items() if name in decoded}
        assert decoded["decisions"][0]["note"] == note
    finally:
        codec.stop()


@pytest.mark.parametrize(("keys", "named"), [
    ("k1:c2hvcnQ=", "RECON_PAYLOAD_KEYS entry 1 (key 'k1') is 5 bytes; a payload key is 32 bytes (AES-256)"),
    ("k1", "RECON_PAYLOAD_KEYS entry 1 must be id:base64-key"),
    ("k1:%%%", "RECON_PAYLOAD_KEYS entry 1 (key 'k1') is not valid base64"),
])
@pytest.mark.parametrize("command", [("worker",), ("status", "recon-2026-10-13-x"),
                                     ("codec-server",)])
async def test_a_malformed_keyring_is_refused_at_start_in_one_line(
        stack: Stack, keys: str, named: str, command: tuple[str, ...]) -> None:
    done = await asyncio.to_thread(recon_cli, stack.env(RECON_PAYLOAD_KEYS=keys), *command)
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {named}"), done.stderr


async def test_the_codec_server_needs_keys_and_a_token(stack: Stack, tmp_path) -> None:
    env = stack.env()
    env.pop("RECON_PAYLOAD_KEYS", None)
    done = await asyncio.to_thread(recon_cli, env, "codec-server")
    assert (done.returncode, done.stderr.strip()) == (
        1, "error: no payload keys: set RECON_PAYLOAD_KEYS or RECON_PAYLOAD_KEYS_FILE")
    done = await asyncio.to_thread(recon_cli, stack.env(RECON_PAYLOAD_KEYS=new_key_line("k")),
                                   "codec-server")
    assert done.returncode == 1 and "set RECON_CODEC_TOKEN" in done.stderr
    key_file = tmp_path / "keys"
    key_file.write_text(new_key_line("k") + "\n")
    key_file.chmod(0o644)
    done = await asyncio.to_thread(recon_cli, stack.env(RECON_PAYLOAD_KEYS_FILE=str(key_file)),
                                   "worker")
    assert done.returncode == 1
    assert done.stderr.strip() == (f"error: RECON_PAYLOAD_KEYS_FILE {key_file} can be read by others "
                                   f"(mode 0644); run `chmod 600 {key_file}`")
