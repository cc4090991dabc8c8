"""Failure classes and the handover: temporary errors retried with the same keys, unknown ones
handed to a person with the evidence, and the person's answer through the real CLI."""

from __future__ import annotations

import asyncio
import json

import asyncpg
import pytest
from temporalio.client import Client

from recon.domain.models import Decision
from recon.ops.history import read_history
from recon.tools.seed import seed_night
from tests.approvers import signed
from tests.helpers import ledger_rows, recon_cli, settings_for, start, wait_for

# Real worker processes or whole nights: the slow tier (`uv run pytest -m "not slow"` skips it).
pytestmark = pytest.mark.slow


async def _awaiting(client: Client, workflow_id: str) -> bool:
    """The Web UI's filter: runs waiting for a person, found by search attribute."""
    query = f"ReconStatus = 'AwaitingDecision' AND WorkflowId = '{workflow_id}'"
    return any([w async for w in client.list_workflows(query)])


async def test_a_temporary_error_is_retried_with_the_same_keys(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=8)
    spawn_worker(queue, RECON_FAILPOINTS="post_adjustments:3:temporary", RECON_POST_BATCH="2")
    handle = await start(client, settings_for(queue, post_batch_size=2), day, warehouse)
    await asyncio.wait_for(handle.result(), 60)
    history = await read_history(handle)
    assert history.steps["post_adjustments"].max_attempt == 2
    rows = await ledger_rows(pool, handle.id)
    assert len(rows) == 8 == len({r["reference"] for r in rows})
    inspected = recon_cli(stack.env(), "inspect", handle.id, "--json")
    assert inspected.returncode == 0, inspected.stderr
    facts = json.loads(inspected.stdout)
    assert facts["status"] == "completed"
    assert facts["activity_retries"] >= 1 and facts["ledger_rows"] == facts["distinct_keys"] == 8


async def test_a_ledger_that_rejects_every_entry_stops_the_run_and_a_person_retries(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=8)
    wf = f"recon-{day}-{warehouse}"
    trigger = f"reject_{warehouse}"
    await pool.execute(f"""
        CREATE FUNCTION {trigger}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'ledger closed for audit'; END $$;
        CREATE TRIGGER {trigger} BEFORE INSERT ON ledger_entries FOR EACH ROW
        WHEN (NEW.workflow_id = '{wf}') EXECUTE FUNCTION {trigger}();
    """)
    first = spawn_worker(queue)
    handle = await start(client, settings_for(queue), day, warehouse)
    await wait_for(lambda: _awaiting(client, wf), 60, "the run to wait for a person")

    note = await pool.fetchrow("SELECT * FROM handovers WHERE workflow_id = $1", wf)
    assert note["step"] == "post_adjustments"
    assert note["error_type"] == "RaiseError"
    assert "ledger closed for audit" in note["error_message"]
    assert note["attempts"] == 1, "an unknown error is not retried blindly"
    posted = json.loads(note["posted"])
    assert posted["ledger_entries"] == 0 and posted["flagged"] == 8
    assert "0 of 8 ledger entries" in note["note"] and "Next, the agent would" in note["note"]
    assert await pool.fetchval(
        "SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'handover'", wf) == 1

    listed = recon_cli(stack.env(), "handovers")
    assert listed.returncode == 0 and wf in listed.stdout
    shown = recon_cli(stack.env(), "handover", wf)
    assert shown.returncode == 0 and "ledger closed for audit" in shown.stdout

    # The wait survives a worker restart: nothing is lost while the person thinks.
    first.kill()
    spawn_worker(queue)
    await pool.execute(f"DROP TRIGGER {trigger} ON ledger_entries; DROP FUNCTION {trigger}();")
    approved = recon_cli(stack.env(), "approve", wf, "--handover", "1", "--decision", "retry",
                         "--by", "asha",
                         "--note", "audit lock lifted")
    assert approved.returncode == 0, approved.stderr
    summary = await asyncio.wait_for(handle.result(), 60)
    assert summary.status == "Completed"
    rows = await ledger_rows(pool, wf)
    assert len(rows) == 8 == len({r["reference"] for r in rows})
    decided = await pool.fetchrow("SELECT * FROM handovers WHERE workflow_id = $1", wf)
    assert (decided["decision"], decided["decided_by"]) == ("retry", "asha")
    assert decided["decided_at"] is not None


async def test_the_gate_before_debit_notes_holds_them_until_approved(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=8)
    wf = f"recon-{day}-{warehouse}"
    spawn_worker(queue, RECON_GATE_MAX_TOTAL_PAISE="100")  # the gate is the worker's policy
    handle = await start(client, settings_for(queue), day, warehouse)
    await wait_for(lambda: _awaiting(client, wf), 60, "the gate to hand over")
    note = await pool.fetchrow("SELECT * FROM handovers WHERE workflow_id = $1", wf)
    assert note["step"] == "gate_before_debit_notes" and note["error_type"] == "UnclearEvidence"
    assert "above the" in note["error_message"]
    assert len(await ledger_rows(pool, wf)) == 8
    assert await pool.fetchval(
        "SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'debit-note'", wf) == 0

    env = stack.env()
    for args, reason in [
        (("--decision", "maybe", "--by", "asha"), "unknown decision"),
        (("--decision", "resume", "--by", " "), "say who decides"),
    ]:
        refused = recon_cli(env, "approve", wf, "--handover", "1", *args)
        assert refused.returncode != 0
        assert reason in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    nobody = recon_cli(env, "approve", "recon-1999-01-01-nowhere", "--handover", "1",
                       "--decision", "resume", "--by", "asha")
    assert nobody.returncode != 0 and "no running run" in nobody.stderr

    # A signal that cannot be accepted is ignored; the run keeps waiting.
    await handle.signal("decide_signal", Decision(decision="explode", by="x"))
    await asyncio.sleep(0.5)
    assert (await handle.query("progress"))["status"] == "AwaitingDecision"
    await handle.signal("decide_signal", await signed(pool, stack.state, wf, "resume",
                                                      by="ravi", note="checked"))
    summary = await asyncio.wait_for(handle.result(), 60)
    assert summary.status == "Completed" and summary.debit_notes > 0
    assert await pool.fetchval(
        "SELECT decided_by FROM handovers WHERE workflow_id = $1", wf) == "ravi"

    again = recon_cli(env, "approve", wf, "--handover", "1", "--decision", "resume", "--by", "asha")
    assert again.returncode != 0 and len(again.stderr.strip().splitlines()) == 1


async def test_a_second_decision_on_the_same_handover_is_refused(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    """Two people answer the same handover at once: one decision wins, the other is refused by
    the update's validator, before anything is written to the run's history."""
    from temporalio.client import WorkflowUpdateFailedError

    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=5)
    wf = f"recon-{day}-{warehouse}"
    spawn_worker(queue, RECON_GATE_MAX_TOTAL_PAISE="100")  # the gate is the worker's policy
    handle = await start(client, settings_for(queue), day, warehouse)
    await wait_for(lambda: _awaiting(client, wf), 60, "the gate to hand over")
    answers = await asyncio.gather(
        handle.execute_update("decide", await signed(pool, stack.state, wf, "resume")),
        handle.execute_update("decide", await signed(pool, stack.state, wf, "undo", by="ravi")),
        return_exceptions=True,
    )
    accepted = [a for a in answers if isinstance(a, str)]
    refused = [a for a in answers if isinstance(a, WorkflowUpdateFailedError)]
    assert len(accepted) == 1 and len(refused) == 1, answers
    assert "already decided" in str(refused[0].cause)
    winner = ("resume", "asha") if accepted[0].startswith("resume") else ("undo", "ravi")
    summary = await asyncio.wait_for(handle.result(), 60)
    assert summary.status == ("Completed" if winner[0] == "resume" else "Undone")
    decided = await pool.fetch("SELECT decision, decided_by FROM handovers WHERE workflow_id = $1", wf)
    assert [(d["decision"], d["decided_by"]) for d in decided] == [winner]


async def test_a_step_is_done_only_when_the_ledger_holds_it(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    """A ledger that silently drops entries (no error at all) is caught by the step's closing
    check: the step fails non-retryably and the run hands over instead of calling it done."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=8)
    wf = f"recon-{day}-{warehouse}"
    trigger = f"drop_{warehouse}"
    await pool.execute(f"""
        CREATE FUNCTION {trigger}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RETURN NULL; END $$;
        CREATE TRIGGER {trigger} BEFORE INSERT ON ledger_entries FOR EACH ROW
        WHEN (NEW.workflow_id = '{wf}' AND NEW.line_no = 1) EXECUTE FUNCTION {trigger}();
    """)
    try:
        spawn_worker(queue)
        handle = await start(client, settings_for(queue), day, warehouse)
        await wait_for(lambda: _awaiting(client, wf), 60, "the run to hand over")
    finally:
        await pool.execute(f"DROP TRIGGER {trigger} ON ledger_entries; DROP FUNCTION {trigger}();")
    note = await pool.fetchrow("SELECT * FROM handovers WHERE workflow_id = $1", wf)
    assert note["step"] == "post_adjustments" and note["error_type"] == "VerificationFailed"
    assert "missing" in note["error_message"]
    progress = await handle.query("progress")
    assert "post_adjustments" not in progress["steps_done"]
    assert await pool.fetchval(
        "SELECT count(*) FROM stock_movements WHERE workflow_id = $1", wf) == 0
    await handle.execute_update("decide", await signed(pool, stack.state, wf, "retry"))
    await asyncio.wait_for(handle.result(), 60)
    assert len(await ledger_rows(pool, wf)) == 8


async def test_a_waiting_run_sends_a_reminder_each_morning(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    """The 'morning' is set some seconds ahead so the test sees the reminder go out. The run must
    reach its gate before then (a morning already past when it starts waiting is tomorrow's):
    ~3 s alone, over 10 s late in a loaded full suite, so the morning is 30 s away."""
    from datetime import UTC, datetime, timedelta

    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=5)
    wf = f"recon-{day}-{warehouse}"
    spawn_worker(queue, RECON_GATE_MAX_TOTAL_PAISE="100")
    morning = datetime.now(UTC) + timedelta(seconds=30)
    soon = morning.strftime("%H:%M:%S")
    handle = await start(client, settings_for(queue, reminder_utc_time=soon), day, warehouse)
    await wait_for(lambda: _awaiting(client, wf), 60, "the gate to hand over")
    assert datetime.now(UTC) < morning, "the run reached its gate after the morning it was given"

    async def reminded() -> int:
        return await pool.fetchval(
            "SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'reminder'", wf)
    await wait_for(reminded, 60, "the morning reminder")
    reminder = await pool.fetchrow(
        "SELECT * FROM outbox WHERE workflow_id = $1 AND kind = 'reminder'", wf)
    assert reminder["key"] == f"{wf}:handover:1:reminder:1"
    assert "still waits for a decision" in reminder["subject"]
    assert (await handle.query("progress"))["status"] == "AwaitingDecision"
    await handle.execute_update("decide", await signed(pool, stack.state, wf, "resume"))
    await asyncio.wait_for(handle.result(), 60)
    assert await reminded() == 1, "the next reminder is a day away"
