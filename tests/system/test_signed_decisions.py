"""No one decides under another's name: decisions are signed by approvers on record, and the run
checks each one in Postgres before it acts (issue 22; README "Approvers"; docs/design.md §3).

Decisions are sent the way an intruder would, straight to Temporal with the `temporal` CLI
(`temporal workflow update execute ... --name decide`), and the way a person would, with
`recon approve` (its `--print` JSON pasted into the same command)."""

from __future__ import annotations

import asyncio
import json
import stat
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client

from recon.tools.seed import seed_night
from tests.approvers import key_path, signed
from tests.helpers import ROOT, recon_cli, settings_for, start, wait_for

pytestmark = pytest.mark.slow

TEMPORAL = str(ROOT / ".venv" / "bin" / "temporal")


def send_update(address: str, wf: str, body: dict | str) -> subprocess.CompletedProcess:
    """A decision sent with Temporal's own CLI, as anyone who reaches the frontend could."""
    text = body if isinstance(body, str) else json.dumps(body)
    return subprocess.run(
        [TEMPORAL, "workflow", "update", "execute", "--address", address, "--namespace",
         "default", "--workflow-id", wf, "--name", "decide", "--input", text],
        capture_output=True, text=True, timeout=60)


def refused(done: subprocess.CompletedProcess, words: str) -> bool:
    """Refused, in words; with payload encryption on (RECON_TEST_PAYLOAD_KEYS) the CLI without
    the codec sees only the failure's type: the reason is then read from Postgres."""
    out = done.stdout + done.stderr
    return done.returncode != 0 and (
        words in out or "Encoded failure (type: DecisionRefused" in out
        or "Encoded failure (type: ValueError" in out)


async def _waiting(client: Client, wf: str) -> bool:
    progress = await client.get_workflow_handle(wf).query("progress")
    return progress["status"] == "AwaitingDecision"


async def _at_gate(pool, client, night, spawn_worker, invoices=40, mismatches=5, **worker_env):
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=invoices, mismatches=mismatches)
    wf = f"recon-{day}-{warehouse}"
    # the gate is the worker's policy: this worker's holds the night
    spawn_worker(queue, **{"RECON_GATE_MAX_TOTAL_PAISE": "100", **worker_env})
    handle = await start(client, settings_for(queue), day, warehouse)
    await wait_for(lambda: _waiting(client, wf), 60, "the gate to hand over")
    return wf, handle


def _printed(env: dict, wf: str, *args: str) -> dict:
    out = recon_cli(env, "approve", wf, "--handover", "1", "--print", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


async def test_forged_unsigned_stale_and_revoked_decisions_are_refused_and_kept_on_record(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack, tmp_path: Path
) -> None:
    wf, handle = await _at_gate(pool, client, night, spawn_worker)
    env = stack.env()
    who = f"mallory-{night[1]}"
    key = tmp_path / "mallory.pem"

    added = recon_cli(env, "approvers", "add", who, "--email", "m@distributor.example",
                      "--role", "approver", "--key-file", str(key))
    assert added.returncode == 0, added.stderr
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    again = recon_cli(env, "approvers", "add", f"{who}-2", "--email", "m@distributor.example",
                      "--role", "approver", "--key-file", str(key))
    assert again.returncode != 0 and "already exists" in again.stderr
    listed = recon_cli(env, "approvers", "list")
    assert who in listed.stdout and "asha" in listed.stdout

    mallory = dict(env, RECON_APPROVER_KEY=str(key))
    unsigned = send_update(stack.temporal_address, wf,
                           {"decision": "resume", "by": "asha", "handover_no": 1})
    assert refused(unsigned, "unsigned"), unsigned.stdout + unsigned.stderr

    # Mallory signs a decision and puts asha's name on it: the signature is not asha's.
    forged = _printed(mallory, wf, "--decision", "resume")
    assert forged["by"] == who
    forged["by"] = "asha"
    answer = send_update(stack.temporal_address, wf, forged)
    assert refused(answer, "forged"), answer.stdout + answer.stderr
    # Or she alters a signed decision of her own (undo instead of resume).
    altered = _printed(mallory, wf, "--decision", "resume")
    altered["decision"] = "undo"
    answer = send_update(stack.temporal_address, wf, altered)
    assert refused(answer, "forged"), answer.stdout + answer.stderr

    # A signature made 20 minutes ago is stale.
    old = await signed(pool, stack.state, wf, "resume")
    old_sig = await _sign_at(pool, stack.state, wf, datetime.now(UTC) - timedelta(minutes=20))
    assert old.signature != old_sig["signature"]
    answer = send_update(stack.temporal_address, wf, old_sig)
    assert refused(answer, "stale"), answer.stdout + answer.stderr

    # A key revoked after it signed: refused, even though the signature is good.
    before = _printed(mallory, wf, "--decision", "resume")
    revoked = recon_cli(env, "approvers", "revoke", who)
    assert revoked.returncode == 0, revoked.stderr
    answer = send_update(stack.temporal_address, wf, before)
    assert refused(answer, "revoked"), answer.stdout + answer.stderr
    by_cli = recon_cli(mallory, "approve", wf, "--handover", "1", "--decision", "resume")
    assert by_cli.returncode != 0 and "revoked" in by_cli.stderr
    assert len(by_cli.stderr.strip().splitlines()) == 1

    assert await _waiting(client, wf), "no refused decision moves the run"
    rows = await pool.fetch(
        "SELECT tried_by, signer, via, reason FROM refused_decisions WHERE workflow_id = $1"
        " ORDER BY received_at", wf)
    assert [(r["tried_by"], r["signer"]) for r in rows] == [
        ("asha", None), ("asha", None), (who, None), ("asha", "asha"), (who, who), (who, who)]
    assert {r["via"] for r in rows} == {"update"}
    for row, word in zip(rows, ("unsigned", "forged", "forged", "stale", "revoked", "revoked"),
                         strict=True):
        assert word in row["reason"], (word, row["reason"])
    shown = recon_cli(env, "handover", wf)
    assert f"refused: resume by {who}" in shown.stdout and "revoked" in shown.stdout

    # asha's own `--print` JSON, pasted into the same command (the Web UI's "Send an Update").
    good = _printed(env, wf, "--decision", "resume", "--note", "checked")
    accepted = send_update(stack.temporal_address, wf, good)
    # With payload encryption on, the CLI without the codec cannot read the (encrypted) answer;
    # the run finishing below is the proof either way.
    assert accepted.returncode == 0 or "binary/encrypted" in accepted.stderr, \
        accepted.stdout + accepted.stderr
    summary = await asyncio.wait_for(handle.result(), 60)
    assert summary.status == "Completed"
    decided = await pool.fetchrow(
        "SELECT decided_by, confirmed_by, decision_note FROM handovers WHERE workflow_id = $1", wf)
    assert tuple(decided) == ("asha", None, "checked")


async def _sign_at(pool, state, wf: str, when: datetime) -> dict:
    from recon.ops.approvers import load_key, signed_decision

    decision = await signed_decision(pool, load_key(key_path(state, "asha")), run=wf,
                                     handover_no=1, decision="resume", by="asha", note="",
                                     park=[], now=when)
    return decision.model_dump()


async def test_over_the_limit_is_refused_and_four_eyes_need_two_different_approvers(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack, tmp_path: Path
) -> None:
    wf, handle = await _at_gate(pool, client, night, spawn_worker,
                                RECON_FOUR_EYES_PAISE="100")
    env = stack.env()
    small = f"small-{night[1]}"
    key = tmp_path / "small.pem"
    added = recon_cli(env, "approvers", "add", small, "--email", "s@distributor.example",
                      "--role", "approver", "--limit", "1", "--key-file", str(key))
    assert added.returncode == 0, added.stderr
    over = recon_cli(dict(env, RECON_APPROVER_KEY=str(key)), "approve", wf, "--handover", "1",
                     "--decision", "resume")
    assert over.returncode != 0 and f"over {small}'s limit" in over.stderr, over.stderr
    assert "₹1 " in over.stderr or "up to ₹1" in over.stderr

    first = recon_cli(env, "approve", wf, "--handover", "1", "--decision", "resume")
    assert first.returncode == 0, first.stderr
    assert "second approver" in first.stdout
    assert await _waiting(client, wf), "one approval above the four-eyes amount moves nothing"
    same = recon_cli(env, "approve", wf, "--handover", "1", "--decision", "resume")
    assert same.returncode != 0 and "already approved" in same.stderr
    shown = recon_cli(env, "handover", wf)
    assert "Four eyes: resume by asha waits for a second, different approver" in shown.stdout
    ravi = dict(env, RECON_APPROVER_KEY=str(key_path(stack.state, "ravi")))
    second = recon_cli(ravi, "approve", wf, "--handover", "1", "--decision", "resume",
                       "--by", "ravi")
    assert second.returncode == 0, second.stderr
    summary = await asyncio.wait_for(handle.result(), 60)
    assert summary.status == "Completed" and summary.debit_notes > 0
    decided = await pool.fetchrow(
        "SELECT decided_by, confirmed_by FROM handovers WHERE workflow_id = $1", wf)
    assert tuple(decided) == ("asha", "ravi")
    refusals = await pool.fetch(
        "SELECT tried_by, signer FROM refused_decisions WHERE workflow_id = $1"
        " ORDER BY received_at", wf)
    assert [tuple(r) for r in refusals] == [(small, small), ("asha", "asha")]


async def test_by_must_name_the_key_owner_and_bounds_hold_on_every_path(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    wf, handle = await _at_gate(pool, client, night, spawn_worker)
    env = stack.env()
    typed = recon_cli(env, "approve", wf, "--handover", "1", "--decision", "resume",
                      "--by", "ravi")
    assert typed.returncode != 0 and "not the owner of this key (asha)" in typed.stderr
    huge = await signed(pool, stack.state, wf, "resume", note="x" * 5000)
    answer = send_update(stack.temporal_address, wf, huge.model_dump())
    assert refused(answer, "note"), answer.stdout + answer.stderr
    # A park list from a bare Update gets the same live-entry check as the CLI's.
    parked = await signed(pool, stack.state, wf, "resume", note="n", park=["INV-NOPE"])
    answer = send_update(stack.temporal_address, wf, parked.model_dump())
    assert refused(answer, "no such invoice"), answer.stdout + answer.stderr
    # The memo keeps the last few ignored signals and a count; a name with terminal escapes
    # in one is shown escaped by `recon handover`, never obeyed.
    for n in range(12):
        await handle.signal("decide_signal", {"decision": "resume", "by": f"eve{n}",
                                              "handover_no": 7})
    await handle.signal("decide_signal", {"decision": "resume", "by": "\x1b[2Jeve",
                                          "handover_no": 7})

    async def memo_full():
        memo = await (await handle.describe()).memo()
        return memo.get("ignored_count") == 13 and memo
    memo = await wait_for(memo_full, 20, "thirteen ignored signals")
    assert len(memo["ignored_decisions"]) == 5
    shown = recon_cli(env, "handover", wf)
    assert "\x1b" not in shown.stdout and "by \\x1b[2Jeve" in shown.stdout, shown.stdout
    assert "13 decisions ignored" in shown.stdout
    assert await _waiting(client, wf)
    signed_ok = recon_cli(env, "approve", wf, "--handover", "1", "--decision", "resume")
    assert signed_ok.returncode == 0, signed_ok.stderr
    assert (await asyncio.wait_for(handle.result(), 60)).status == "Completed"
