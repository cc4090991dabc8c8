"""No money moves on Temporal access alone (issue 39, items 1 and 2; docs/design.md §3, "Mandates").

Written as an attacker who reaches the Temporal frontend and nothing else: a workflow of their own,
on a worker of their own with its own task queue, calls recon's activities by name on recon's
queue (`workflow.execute_activity("send_debit_notes", ..., task_queue=<recon's queue>)`), or starts
recon's workflows as its children under a workflow id of its choosing; or the `temporal` CLI starts
a night again under its id, or resets an undo. Each is refused in Postgres and changes no row; the
legitimate path beside it (a gate resume, an undo decision, `recon undo`, `recon redo`) still works.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections import Counter
from datetime import timedelta

import asyncpg
import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ChildWorkflowError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from recon.runtime.embedded import temporal_binary
from recon.tools.seed import seed_night
from tests.approvers import signed
from tests.helpers import inprocess_worker, recon_cli, settings_for, start, wait_for

pytestmark = pytest.mark.slow


@workflow.defn(name="RogueCaller")
class RogueCaller:
    """The attacker's workflow: one call by name on recon's queue, and what came of it."""

    @workflow.run
    async def run(self, call: dict) -> str:
        try:
            if call.get("child_id"):
                await workflow.execute_child_workflow(
                    call["what"], call["arg"], id=call["child_id"], task_queue=call["queue"])
            else:
                await workflow.execute_activity(
                    call["what"], call["arg"], task_queue=call["queue"],
                    start_to_close_timeout=timedelta(seconds=60),
                    retry_policy=RetryPolicy(maximum_attempts=1))
        except (ActivityError, ChildWorkflowError) as err:
            return f"refused: {err.cause}"
        return "done"


async def rogue(client: Client, recon_queue: str, what: str, arg: dict, *,
                workflow_id: str | None = None, child_id: str | None = None) -> str:
    """Run the attacker's workflow on a worker of its own (its own task queue)."""
    own_queue = f"rogue-{recon_queue}"
    async with Worker(client, task_queue=own_queue, workflows=[RogueCaller],
                      workflow_runner=UnsandboxedWorkflowRunner()):
        return await client.execute_workflow(
            RogueCaller.run, {"what": what, "arg": arg, "queue": recon_queue,
                              "child_id": child_id},
            id=workflow_id or f"rogue-{what}-{recon_queue}", task_queue=own_queue,
            execution_timeout=timedelta(seconds=120))


async def _books(pool: asyncpg.Pool, wf: str) -> list[tuple]:
    """Every ledger row, stock movement, message and generation of the night."""
    rows = []
    for table, key in (("ledger_entries", "reference"), ("stock_movements", "key"),
                       ("outbox", "key"), ("run_generations", "raised_by")):
        rows += [tuple(r) for r in await pool.fetch(
            f"SELECT * FROM {table} WHERE workflow_id = $1 ORDER BY {key}", wf)]
    return rows


async def _count(pool: asyncpg.Pool, wf: str, where: str, table: str = "outbox") -> int:
    return await pool.fetchval(f"SELECT count(*) FROM {table} WHERE workflow_id = $1 AND {where}",
                               wf)


async def _cli(stack, queue: str, *args: str):
    """The real command line, as a person runs it (signed with asha's key), off the loop the
    in-process worker runs on."""
    return await asyncio.to_thread(recon_cli, stack.env(RECON_TASK_QUEUE=queue), *args,
                                   timeout=120)


async def _temporal(stack, *args: str) -> None:
    done = await asyncio.to_thread(
        subprocess.run, [temporal_binary(), *args, "--address", stack.temporal_address],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


async def _refused(client: Client, workflow_id: str) -> str:
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(client.get_workflow_handle(workflow_id).result(), 90)
    assert getattr(failed.value.cause, "type", None) == "RequestRefused", failed.value.cause
    return str(failed.value.cause)


async def _at_gate(pool, client, night):
    """A night held at its gate (this worker's total limit is ₹1), waiting for a person."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=20, mismatches=4)
    handle = await start(client, settings_for(queue), day, warehouse)

    async def waiting() -> bool:
        return (await handle.query("progress"))["status"] == "AwaitingDecision"
    await wait_for(waiting, 60, "the gate to hand over")
    return handle


async def _finished(pool, client, night):
    day, warehouse, queue = night
    seeded = await seed_night(pool, day, warehouse, invoices=30, mismatches=6)
    handle = await start(client, settings_for(queue), day, warehouse)
    await asyncio.wait_for(handle.result(), 90)
    return seeded, handle.id


async def test_a_rogue_workflow_cannot_send_the_debit_notes_of_a_night_held_at_its_gate(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    day, warehouse, queue = night
    async with inprocess_worker(settings_for(queue, gate_max_total_paise=100)):
        handle = await _at_gate(pool, client, night)
        wf = handle.id
        notes = {"workflow_id": wf, "business_date": day, "warehouse": warehouse}
        answer = await rogue(client, queue, "send_debit_notes", notes)
        assert answer.startswith("refused") and "its gate has not passed" in answer, answer
        # Asking the gate first changes nothing: it writes what it reads, and it still holds.
        assert (await rogue(client, queue, "check_evidence", {"workflow_id": wf},
                            workflow_id=f"rogue-gate-{queue}")).startswith("done")
        again = await rogue(client, queue, "send_debit_notes", notes,
                            workflow_id=f"rogue-again-{queue}")
        assert again.startswith("refused"), again
        assert await _count(pool, wf, "kind = 'debit-note'") == 0

        # The person's signed resume at the gate sends them.
        assert await handle.execute_update("decide", await signed(pool, stack.state, wf,
                                                                  "resume"))
        assert (await asyncio.wait_for(handle.result(), 90)).status == "Completed"
    assert await _count(pool, wf, "kind = 'debit-note'") > 0


async def test_an_undo_started_by_a_workflow_named_like_a_redo_is_refused_by_data(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    """`redo-<night>-g99` starts UndoReconciliation as its child: its parent's id proves nothing,
    no verified undo of the night is on record, so nothing is reversed or withdrawn."""
    day, warehouse, queue = night
    async with inprocess_worker(settings_for(queue, gate_max_total_paise=100)):
        handle = await _at_gate(pool, client, night)
        wf = handle.id
        books = await _books(pool, wf)
        answer = await rogue(client, queue, "UndoReconciliation",
                             {"run_workflow_id": wf, "reason": "x", "by": "asha"},
                             workflow_id=f"redo-{wf}-g99", child_id=f"undo-{wf}")
        assert answer.startswith("refused"), answer
        assert await _books(pool, wf) == books, "nothing reversed, withdrawn or raised"

        # The person's signed undo decision on the handover undoes the night.
        assert await handle.execute_update("decide", await signed(pool, stack.state, wf, "undo"))
        assert (await asyncio.wait_for(handle.result(), 90)).status == "Undone"
    assert await pool.fetchval("SELECT count(*) FROM live_ledger_entries WHERE workflow_id = $1",
                               wf) == 0
    assert await _count(pool, wf, "kind = 'reversal'", "ledger_entries") > 0


async def test_rogue_posting_booking_and_notes_after_an_undo_are_refused_a_signed_redo_posts(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    day, warehouse, queue = night
    async with inprocess_worker(settings_for(queue)):
        seeded, wf = await _finished(pool, client, night)
        assert (await _cli(stack, queue, "undo", wf, "--reason", "wrong file")).returncode == 0
        books = await _books(pool, wf)
        post = {"workflow_id": wf, "warehouse": warehouse}
        for what, arg in (("post_adjustments", post), ("update_stock", post),
                          ("send_debit_notes", {**post, "business_date": day})):
            answer = await rogue(client, queue, what, arg, workflow_id=f"rogue-{what}-{wf}")
            assert answer.startswith("refused"), (what, answer)
        # The signed undo's generation is open already: asked again by name, it raises nothing.
        assert await rogue(client, queue, "open_next_generation",
                           {"run_workflow_id": wf, "raised_by": "me"},
                           workflow_id=f"rogue-generation-{wf}") == "done"
        assert await _books(pool, wf) == books
        assert await pool.fetchval("SELECT recon_generation($1)", wf) == 2

        redone = await _cli(stack, queue, "redo", wf, "--reason", "file fixed")
        assert redone.returncode == 0, redone.stderr
    live = await pool.fetchval("SELECT count(*) FROM live_ledger_entries WHERE workflow_id = $1",
                               wf)
    assert live == len(seeded.adjustments)


async def test_a_night_started_again_under_its_id_after_an_undo_posts_nothing(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    """`temporal workflow start --type NightlyReconciliation -w NIGHT --id-reuse-policy
    AllowDuplicate` after a signed undo is a redo nobody signed."""
    day, warehouse, queue = night
    async with inprocess_worker(settings_for(queue)):
        _, wf = await _finished(pool, client, night)
        assert (await _cli(stack, queue, "undo", wf, "--reason", "wrong file")).returncode == 0
        books = await _books(pool, wf)
        await _temporal(stack, "workflow", "start", "--type", "NightlyReconciliation", "--task-queue",
                  queue, "-w", wf, "--id-reuse-policy", "AllowDuplicate", "--input",
                  json.dumps({"business_date": day, "warehouse": warehouse}))
        assert "no signed redo" in await _refused(client, wf)
    assert await _books(pool, wf) == books, "nothing posted, booked or mailed"


async def test_a_reset_of_the_undo_after_a_redo_refuses_the_spent_signature(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    """The reset keeps the undo's first execution id; the signature's use is tied to the
    night's generation, and a redo came since: the replay is refused, the redo stands. A rogue
    reversal by name after the redo is refused too."""
    day, warehouse, queue = night
    async with inprocess_worker(settings_for(queue)):
        seeded, wf = await _finished(pool, client, night)
        assert (await _cli(stack, queue, "undo", wf, "--reason", "wrong file")).returncode == 0
        assert (await _cli(stack, queue, "redo", wf, "--reason", "file fixed")).returncode == 0
        books = await _books(pool, wf)
        await _temporal(stack, "workflow", "reset", "-w", f"undo-{wf}", "--type", "FirstWorkflowTask",
                  "--reason", "replay", "-y")
        assert "already used" in await _refused(client, f"undo-{wf}")
        for what in ("reverse_ledger_entries", "withdraw_debit_notes"):
            answer = await rogue(client, queue, what,
                                 {"run_workflow_id": wf, "reason": "x", "by": "asha"},
                                 workflow_id=f"rogue-{what}-{wf}")
            assert answer.startswith("refused"), (what, answer)
    assert await _books(pool, wf) == books
    live = await pool.fetchval("SELECT count(*) FROM live_ledger_entries WHERE workflow_id = $1",
                               wf)
    assert live == len(seeded.adjustments)


async def test_rogue_reversals_need_a_verified_undo_of_their_own_scope(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    """Reversals by name of a night nobody undid, and of the whole night after a signed undo of
    one supplier, are refused; the signed supplier undo itself reverses that supplier."""
    day, warehouse, queue = night
    async with inprocess_worker(settings_for(queue)):
        seeded, wf = await _finished(pool, client, night)
        books = await _books(pool, wf)
        whole = {"run_workflow_id": wf, "reason": "x", "by": "asha"}
        for what, arg in (("open_next_generation", {"run_workflow_id": wf, "raised_by": "me"}),
                          ("reverse_ledger_entries", whole), ("reverse_stock_movements", whole),
                          ("withdraw_debit_notes", whole)):
            answer = await rogue(client, queue, what, arg, workflow_id=f"rogue-{what}-{wf}")
            assert answer.startswith("refused"), (what, answer)
        assert await pool.fetchval("SELECT recon_generation($1)", wf) == 1
        assert await _books(pool, wf) == books

        supplier = Counter(a.supplier_id for a in seeded.adjustments).most_common(1)[0][0]
        done = await _cli(stack, queue, "undo", wf, "--supplier", supplier, "--reason", "disputed")
        assert done.returncode == 0, done.stderr
        others = await pool.fetchval(
            "SELECT count(*) FROM live_ledger_entries WHERE workflow_id = $1"
            " AND supplier_id <> $2", wf, supplier)
        assert others > 0
        answer = await rogue(client, queue, "reverse_ledger_entries", whole,
                             workflow_id=f"rogue-widen-{wf}")
        assert answer.startswith("refused"), answer
    assert await pool.fetchval(
        "SELECT count(*) FROM live_ledger_entries WHERE workflow_id = $1 AND supplier_id <> $2",
        wf, supplier) == others


async def test_a_rogue_cannot_park_invoices_to_shrink_what_the_gate_weighs(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    """Parking by name would take invoices out of the gate's weighing (and the ledger's check):
    only a verified decision that signed those invoices out parks them."""
    day, warehouse, queue = night
    async with inprocess_worker(settings_for(queue, gate_max_total_paise=100)):
        handle = await _at_gate(pool, client, night)
        wf = handle.id
        invoices = [r["invoice_no"] for r in await pool.fetch(
            "SELECT DISTINCT invoice_no FROM open_mismatches WHERE workflow_id = $1"
            " ORDER BY 1", wf)]
        answer = await rogue(client, queue, "park_invoices",
                             {"workflow_id": wf, "handover_no": 1, "invoices": invoices,
                              "by": "asha", "reason": "x"}, workflow_id=f"rogue-park-{queue}")
        assert answer.startswith("refused") and "nothing is parked" in answer, answer
        assert await _count(pool, wf, "step = 'decision'", "parked_items") == 0
        # The legitimate path (a signed decision's --park) is tests/system/test_decisions.py's.
        await handle.terminate("test over")
