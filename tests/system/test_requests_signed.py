"""Undo, redo and the answers to a refused mail are signed requests, and no signature is good
twice (issue 22; README "Approvers"; docs/design.md §3 "Signed requests", "One use per signature").

Requests are started the way an intruder would, straight on Temporal with the `temporal` CLI
(`temporal workflow start --type UndoReconciliation ...`), and the way a person would, with
`recon undo` / `recon redo` / `recon mail`. A refused one changes nothing and is on record in
`refused_requests` with who tried."""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDReusePolicy

from recon.domain.errors import Refused
from recon.domain.labels import RECON_STATUS
from recon.domain.models import RunRequest, UndoRequest
from recon.domain.requests import MAIL_RESEND, UNDO, SignedRequest
from recon.mail import bounces
from recon.ops.approvers import load_key
from recon.ops.requests import signed_mail, signed_request
from recon.tools.seed import seed_night
from tests.approvers import key_path, signed, signed_undo
from tests.helpers import ROOT, inprocess_worker, recon_cli, settings_for, start, wait_for
from workflows.nightly import NightlyReconciliation
from workflows.undo import UndoReconciliation

pytestmark = pytest.mark.slow

TEMPORAL = str(ROOT / ".venv" / "bin" / "temporal")


def start_raw(address: str, queue: str, workflow_id: str, body: dict) -> None:
    """An undo started with Temporal's own CLI, as anyone who reaches the frontend could."""
    done = subprocess.run(
        [TEMPORAL, "workflow", "start", "--address", address, "--namespace", "default",
         "--type", "UndoReconciliation", "--task-queue", queue, "--workflow-id", workflow_id,
         "--input", json.dumps(body)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


async def _failure(client: Client, workflow_id: str) -> str:
    """The one line a refused request ends with (its run failed, type RequestRefused)."""
    handle = client.get_workflow_handle(workflow_id)
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), 60)
    cause = failed.value.cause
    assert getattr(cause, "type", None) == "RequestRefused", cause
    assert (await handle.describe()).typed_search_attributes.get(RECON_STATUS) == "Refused"
    return str(cause)


async def _books(pool: asyncpg.Pool, wf: str) -> list[tuple]:
    """Every ledger row, stock movement and message of the night."""
    rows = []
    for table, key in (("ledger_entries", "reference"), ("stock_movements", "key"),
                       ("outbox", "key")):
        rows += [tuple(r) for r in await pool.fetch(
            f"SELECT * FROM {table} WHERE workflow_id = $1 ORDER BY {key}", wf)]
    return rows


def _mallory(stack, name: str, tmp_path: Path, *extra: str) -> Path:
    key = tmp_path / f"{name}.pem"
    added = recon_cli(stack.env(), "approvers", "add", name, "--email", f"{name}@distributor.example",
                      "--role", "approver", "--key-file", str(key), *extra)
    assert added.returncode == 0, added.stderr
    return key


async def test_forged_unsigned_revoked_and_over_limit_undos_are_refused_and_change_nothing(
    pool: asyncpg.Pool, client: Client, night, stack, tmp_path: Path
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=6)
    settings = settings_for(queue)
    who, tight = f"mallory-{warehouse}", f"tight-{warehouse}"
    mallory = _mallory(stack, who, tmp_path)
    tight_key = _mallory(stack, tight, tmp_path, "--limit", "1")
    async with inprocess_worker(settings):
        wf = (await (await start(client, settings, day, warehouse)).result()).workflow_id
        books = await _books(pool, wf)
        undo_id = f"undo-{wf}"

        # Unsigned, under asha's name.
        start_raw(stack.temporal_address, queue, undo_id,
                  {"run_workflow_id": wf, "reason": "x", "by": "asha"})
        assert "unsigned undo by 'asha'" in await _failure(client, undo_id)
        # Mallory signs her own request and puts asha's name on it.
        forged = await signed_undo(pool, stack.state, wf, by="asha")
        theirs = await signed_request(pool, load_key(mallory), UNDO, run=wf, supplier=None,
                                      references=[], reason=forged.reason, by=who)
        start_raw(stack.temporal_address, queue, undo_id, forged.model_copy(
            update={"signature": theirs.signature, "signed_at": theirs.signed_at}).model_dump())
        assert "forged or altered" in await _failure(client, undo_id)
        # Mallory's own signature, good, but her key is revoked before the undo starts.
        hers = await signed_request(pool, load_key(mallory), UNDO, run=wf, supplier=None,
                                    references=[], reason="mine", by=who)
        good = UndoRequest(run_workflow_id=wf, reason="mine", by=who, signed_at=hers.signed_at,
                           signature=hers.signature)
        assert recon_cli(stack.env(), "approvers", "revoke", who).returncode == 0
        start_raw(stack.temporal_address, queue, undo_id, good.model_dump())
        assert f"{who}'s key was revoked" in await _failure(client, undo_id)
        # A signer whose limit is ₹1, by the CLI: refused by the workflow, in one line.
        over = await asyncio.to_thread(recon_cli, stack.env(
            RECON_TASK_QUEUE=queue, RECON_APPROVER_KEY=str(tight_key)), "undo", wf,
            "--reason", "too big for me", timeout=120)
        assert over.returncode != 0 and f"over {tight}'s limit" in over.stderr, over.stderr
        assert len(over.stderr.strip().splitlines()) == 1
        assert await _books(pool, wf) == books, "no refused undo changed a row"

        rows = await pool.fetch("SELECT purpose, target, tried_by, signer, stake_paise, reason"
                                " FROM refused_requests WHERE run = $1 ORDER BY received_at", wf)
        assert [(r["tried_by"], r["signer"]) for r in rows] == [
            ("asha", None), ("asha", None), (who, who), (tight, tight)]
        assert {(r["purpose"], r["target"]) for r in rows} == {(UNDO, undo_id)}
        assert rows[3]["stake_paise"] == await pool.fetchval(
            "SELECT sum(abs(amount_paise)) FROM live_ledger_entries WHERE workflow_id = $1", wf)
        shown = recon_cli(stack.env(), "handover", wf)
        assert f"refused: undo by {who} ({undo_id})" in shown.stdout, shown.stdout + shown.stderr
        assert "refused: undo by asha (no valid signature)" in shown.stdout

        # asha's signed undo, started the same raw way, is taken, and named hers.
        start_raw(stack.temporal_address, queue, undo_id,
                  (await signed_undo(pool, stack.state, wf, reason="wrong PO file")).model_dump())
        await asyncio.wait_for(client.get_workflow_handle(undo_id).result(), 60)
        memos = await pool.fetch("SELECT DISTINCT memo FROM ledger_entries WHERE workflow_id = $1"
                                 " AND kind = 'reversal'", wf)
        assert [m["memo"] for m in memos] == ["reversal: wrong PO file (by asha)"]


async def test_a_signature_is_good_once_the_undo_replayed_after_a_redo_is_refused(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=6)
    settings = settings_for(queue)
    async with inprocess_worker(settings):
        wf = (await (await start(client, settings, day, warehouse)).result()).workflow_id
        request = await signed_undo(pool, stack.state, wf)
        undo = await client.start_workflow(UndoReconciliation.run, request,
                                           id=request.workflow_id(), task_queue=queue)
        await undo.result()
        # A redo started raw, unsigned: refused before it posts anything.
        unsigned = RunRequest(business_date=day, warehouse=warehouse, redo_of=wf,
                              redo_reason="again", redo_by="asha")
        raw = await client.start_workflow(NightlyReconciliation.run, unsigned,
                                          id=f"redo-{wf}-g2", task_queue=queue)
        assert "unsigned redo" in await _failure(client, raw.id)
        assert await pool.fetchval(
            "SELECT count(*) FROM live_ledger_entries WHERE workflow_id = $1", wf) == 0
        redone = await asyncio.to_thread(recon_cli, stack.env(RECON_TASK_QUEUE=queue), "redo",
                                         wf, "--reason", "PO file fixed", timeout=120)
        assert redone.returncode == 0, redone.stderr
        books = await _books(pool, wf)
        # The same signed undo, within its 15 minutes, would reverse the redo: refused.
        again = await client.start_workflow(
            UndoReconciliation.run, request, id=request.workflow_id(), task_queue=queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE)
        line = await _failure(client, again.id)
        assert "this signed decision was already used at" in line, line
        assert await _books(pool, wf) == books
        # One execution retried is one use: the first undo's row names its own execution.
        spent = await pool.fetch("SELECT purpose, target, signer FROM spent_signatures"
                                 " WHERE run = $1 ORDER BY used_at", wf)
        assert [(s["purpose"], s["signer"]) for s in spent] == [
            (UNDO, "asha"), ("recon-redo/1", "asha")]
        assert spent[0]["target"] == f"{request.workflow_id()}@{undo.result_run_id}"


async def test_a_decision_signed_for_one_execution_is_refused_by_the_next(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    """The night run again under its id (a new execution) hands over at the gate as #1 again:
    the decision signed for the first execution's #1 is refused there, a fresh one is taken."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=5)
    wf = f"recon-{day}-{warehouse}"
    spawn_worker(queue, RECON_GATE_MAX_TOTAL_PAISE="100")

    async def at_gate() -> bool:
        progress = await client.get_workflow_handle(wf).query("progress")
        return progress["status"] == "AwaitingDecision"

    first = await start(client, settings_for(queue), day, warehouse)
    await wait_for(at_gate, 60, "the gate to hand over")
    decision = await signed(pool, stack.state, wf, "resume")
    assert await first.execute_update("decide", decision)
    await asyncio.wait_for(first.result(), 60)

    second = await client.start_workflow(
        NightlyReconciliation.run, RunRequest(business_date=day, warehouse=warehouse),
        id=wf, task_queue=queue, id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE)
    await wait_for(at_gate, 60, "the second execution's gate")
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await second.execute_update("decide", decision)
    assert "already used" in str(refused.value.cause)
    assert await at_gate(), "the replayed decision moved nothing"
    assert await second.execute_update("decide", await signed(pool, stack.state, wf, "resume",
                                                              note="second night"))
    await asyncio.wait_for(second.result(), 60)
    reasons = await pool.fetch("SELECT reason FROM refused_decisions WHERE workflow_id = $1", wf)
    assert [r["reason"][:40] for r in reasons] == ["this signed decision was already used at"]


async def _refused_message(pool: asyncpg.Pool, wf: str) -> str:
    """A debit note the mail server refused for good, with its delivery handover open."""
    key = f"{wf}:debit-note:S001"
    await pool.execute(
        "INSERT INTO outbox (key, workflow_id, kind, supplier_id, recipient, subject, body,"
        " amount_paise, attempts, failed_at, last_error)"
        " VALUES ($1, $2, 'debit-note', 'S001', 'old@supplier.example', 'Debit note', 'b',"
        " 125000, 1, now(), '550 no such user')", key, wf)
    await pool.execute("INSERT INTO mail_handovers (outbox_key, workflow_id, reply, note)"
                       " VALUES ($1, $2, '550 no such user', 'refused')", key, wf)
    return key


async def test_mail_resend_and_dismiss_are_signed_checked_where_they_are_acted_on(
    pool: asyncpg.Pool, stack, night, tmp_path: Path
) -> None:
    wf = f"recon-2026-10-13-{night[1]}"
    key = await _refused_message(pool, wf)
    who = f"mallory-{night[1]}"
    mallory = load_key(_mallory(stack, who, tmp_path))
    before = tuple(await pool.fetchrow("SELECT * FROM outbox WHERE key = $1", key))
    max_age = timedelta(minutes=15)

    typed = recon_cli(stack.env(), "mail", "resend", key, "--by", "ravi")
    assert typed.returncode != 0 and "not the owner of this key (asha)" in typed.stderr
    theirs = await signed_mail(pool, mallory, MAIL_RESEND, outbox_key=key, to=None, note="",
                               by=who)
    with pytest.raises(Refused, match="forged or altered"):  # her signature, asha's name
        await bounces.resend(pool, key, theirs.model_copy(update={"by": "asha"}), None, "",
                               max_age)
    with pytest.raises(Refused, match="unsigned mail resend"):
        await bounces.resend(pool, key, SignedRequest(by="asha", signed_at="", signature=""),
                               None, "", max_age)
    assert recon_cli(stack.env(), "approvers", "revoke", who).returncode == 0
    with pytest.raises(Refused, match="revoked"):
        await bounces.resend(pool, key, theirs, None, "", max_age)
    assert tuple(await pool.fetchrow("SELECT * FROM outbox WHERE key = $1", key)) == before
    rows = await pool.fetch("SELECT purpose, tried_by, signer FROM refused_requests"
                            " WHERE target = $1 ORDER BY received_at", key)
    assert [tuple(r) for r in rows] == [(MAIL_RESEND, "asha", None), (MAIL_RESEND, "asha", None),
                                        (MAIL_RESEND, who, who)]

    mine = await signed_mail(pool, load_key(key_path(stack.state, "asha")), MAIL_RESEND,
                             outbox_key=key, to="new@supplier.example", note="moved", by=None)
    assert "queued again" in await bounces.resend(pool, key, mine, "new@supplier.example",
                                                    "moved", max_age)
    decided = await pool.fetchrow("SELECT decision, decided_by FROM mail_handovers"
                                  " WHERE outbox_key = $1", key)
    assert tuple(decided) == ("resend", "asha")
    # Refused again later: the same signed resend cannot answer this new refusal.
    await pool.execute("UPDATE outbox SET failed_at = now() + interval '1 second'"
                       " WHERE key = $1", key)
    await pool.execute("INSERT INTO mail_handovers (outbox_key, workflow_id, reply, note)"
                       " VALUES ($1, $2, '550 again', 'refused')", key, wf)
    with pytest.raises(Refused, match="already used"):
        await bounces.resend(pool, key, mine, "new@supplier.example", "moved", max_age)
    dismissed = recon_cli(stack.env(), "mail", "dismiss", key, "--note", "phoned them")
    assert dismissed.returncode == 0, dismissed.stderr
    closed = await pool.fetch("SELECT decision, decided_by FROM mail_handovers"
                              " WHERE outbox_key = $1 ORDER BY id", key)
    assert [tuple(r) for r in closed] == [("resend", "asha"), ("dismiss", "asha")]
