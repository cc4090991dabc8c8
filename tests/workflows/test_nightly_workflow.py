"""NightlyReconciliation and UndoReconciliation on a real dev server, with stand-in activities:
the step order, retries, handovers and every decision (docs/design.md §3, README "When a person
decides"), the gate before debit notes, and a redo."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError

from recon.domain.labels import RECON_DATE, RECON_STATUS, RECON_WAREHOUSE
from recon.domain.models import Decision, GateVerdict, HandoverNote, UndoRequest, UndoResult
from recon.domain.steps import STEPS
from tests.workflows.standins import (
    MISMATCHES,
    STANDIN_SIGNATURE,
    STANDINS,
    TASK_QUEUE,
    StandIns,
    night_with_standins,
    period_locked,
)
from workflows.nightly import NightlyReconciliation
from workflows.undo import UndoReconciliation

READS = ["fetch_sources", *STEPS[:6]]  # step 1 fetches from the sources first
NOTES = ["send_debit_notes", "send_summary"]


async def _eventually(probe, what: str, timeout: float = 15.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


async def _handover(handle: WorkflowHandle) -> HandoverNote:
    return await _eventually(lambda: handle.query(NightlyReconciliation.pending_handover),
                             "a handover")


async def _status(handle: WorkflowHandle) -> str:
    return (await handle.query(NightlyReconciliation.progress)).status


async def _search_status(handle: WorkflowHandle) -> str | None:
    return (await handle.describe()).typed_search_attributes.get(RECON_STATUS)


def _decide(decision: str, handover_no: int = 1, **more) -> Decision:
    return Decision(decision=decision, by="asha", handover_no=handover_no,
                    signed_at="2026-10-14T03:00:00+00:00", signature=STANDIN_SIGNATURE, **more)


async def test_a_clean_night_runs_the_ten_steps_in_order(temporal_only: Client) -> None:
    async with night_with_standins(temporal_only) as night:
        handle = await night.start()
        summary = await handle.result()
        progress = await handle.query(NightlyReconciliation.progress)  # a worker answers queries
        calls = night.standins.calls
    assert summary.status == "Completed"
    # Step 1 fetches from the sources before it fixes the night (workflows/patches.py SOURCES_FETCH).
    assert [c for c in calls if c != "check_evidence"] == ["fetch_sources", *STEPS]
    assert calls.index("check_evidence") == calls.index("send_debit_notes") - 1, \
        "the gate looks at the evidence right before the notes"
    assert progress.steps_done == ["fetch_sources", *STEPS]
    assert (progress.status, progress.current_step, progress.handovers) == ("Completed", None, 0)
    assert (progress.invoices, progress.mismatches, progress.ledger_posted) == (3, MISMATCHES, MISMATCHES)
    assert await _search_status(handle) == "Completed"
    keys = {i.workflow_id for name in STEPS for i in night.standins.inputs[name] if hasattr(i, "workflow_id")}
    assert keys == {handle.id}, "every step works under the night's own workflow id"


async def test_a_temporary_error_is_retried_without_a_person(temporal_only: Client) -> None:
    async with night_with_standins(temporal_only) as night:
        night.standins.fail("update_stock", ApplicationError(
            "database unreachable", type="ConnectionResetError", non_retryable=False,
            next_retry_delay=timedelta(milliseconds=50)))
        handle = await night.start()
        summary = await asyncio.wait_for(handle.result(), 20)
        calls = night.standins.calls
    assert summary.status == "Completed"
    assert calls.count("update_stock") == 2
    assert "record_handover" not in calls


@pytest.mark.parametrize("decision", ["resume", "retry"])
async def test_resume_and_retry_both_run_the_failed_step_again(temporal_only: Client, decision: str) -> None:
    async with night_with_standins(temporal_only) as night:
        night.standins.fail("post_adjustments", period_locked())
        handle = await night.start()
        note = await _handover(handle)
        assert (note.handover_no, note.step) == (1, "post_adjustments")
        assert (note.error_type, note.error_message, note.attempts) == ("PeriodLocked", "period locked", 1)
        assert await _status(handle) == "AwaitingDecision"
        assert await _search_status(handle) == "AwaitingDecision"
        assert night.standins.calls[-1] == "record_handover", "nothing moves while it waits"
        assert (await (await handle.describe()).memo())["handover"] == note.note

        answer = await handle.execute_update(NightlyReconciliation.decide, _decide(decision))
        assert answer == f"{decision} accepted for handover #1"
        summary = await handle.result()
        decided = await handle.query(NightlyReconciliation.decisions)
        calls = night.standins.calls
    assert summary.status == "Completed"
    assert calls == READS + [
        "post_adjustments", "record_handover", "record_decision",
        "post_adjustments", "update_stock", "check_evidence", *NOTES,
    ], "the failed step runs again: a decision never skips a business write"
    recorded = night.standins.inputs["record_decision"][0]
    assert (recorded.decision, recorded.by, recorded.handover_no) == (decision, "asha", 1)
    assert [d.decision for d in decided] == [decision]
    memo = await (await handle.describe()).memo()
    assert memo.get("handover") is None, "no handover is shown as pending once decided"
    assert memo["decisions"][0]["decision"] == decision


async def test_a_step_that_fails_again_hands_over_again(temporal_only: Client) -> None:
    async with night_with_standins(temporal_only) as night:
        night.standins.fail("update_stock", period_locked(), period_locked())
        handle = await night.start()
        await _handover(handle)
        await handle.execute_update(NightlyReconciliation.decide, _decide("retry"))
        second = await _eventually(
            lambda: _handover_numbered(handle, 2), "the second handover")
        assert second.step == "update_stock"
        await handle.execute_update(NightlyReconciliation.decide, _decide("resume", 2))
        assert (await handle.result()).status == "Completed"
        assert night.standins.calls.count("update_stock") == 3
        assert night.standins.calls.count("post_adjustments") == 1


async def _handover_numbered(handle: WorkflowHandle, number: int) -> HandoverNote | None:
    note = await handle.query(NightlyReconciliation.pending_handover)
    return note if note and note.handover_no == number else None


async def test_undo_runs_the_compensations_newest_first(temporal_only: Client) -> None:
    async with night_with_standins(temporal_only) as night:
        night.standins.fail("update_stock", period_locked())
        handle = await night.start()
        await _handover(handle)
        await handle.execute_update(NightlyReconciliation.decide, _decide("undo", note="wrong prices"))
        summary = await handle.result()
        undone: UndoResult = await temporal_only.get_workflow_handle_for(
            UndoReconciliation.run, f"undo-{handle.id}").result()
        calls = night.standins.calls
    assert summary.status == "Undone"
    assert (summary.ledger_posted, summary.adjustment_total_paise, summary.debit_notes) == (0, 0, 0)
    after = calls[calls.index("record_decision") + 1:]
    assert after == ["open_next_generation", "withdraw_debit_notes", "reverse_stock_movements",
                     "reverse_ledger_entries"]
    assert not set(NOTES) & set(calls), "an undone night sends no notes"
    requests = [night.standins.inputs[n][0] for n in after[1:]]
    assert {(r.run_workflow_id, r.supplier_id, r.by, r.reason) for r in requests} == \
        {(handle.id, None, "asha", "wrong prices")}
    assert night.standins.inputs["open_next_generation"][0].run_workflow_id == handle.id
    assert (undone.withdrawals, undone.stock_reversals, undone.ledger_reversals,
            undone.reversed_paise) == (1, MISMATCHES, MISMATCHES, 12_500)
    assert await _search_status(handle) == "Undone"
    # In words on both pages, and the undo listed beside its night (its warehouse and date).
    assert summary.in_words.startswith("Undone: the whole night compensated")
    assert undone.in_words.startswith(f"Undone: {handle.id} (whole run): {MISMATCHES} ledger")
    labels = (await temporal_only.get_workflow_handle(f"undo-{handle.id}").describe()
              ).typed_search_attributes
    assert [labels.get(k) for k in (RECON_WAREHOUSE, RECON_DATE, RECON_STATUS)] == [
        handle.id.removeprefix("recon-2026-10-13-"), "2026-10-13", "Undone"]


async def test_a_decision_for_another_handover_is_refused(temporal_only: Client) -> None:
    async with night_with_standins(temporal_only) as night:
        night.standins.fail("post_adjustments", period_locked())
        handle = await night.start()
        await _handover(handle)
        for bad, reason in [
            (_decide("resume", handover_no=2), "handover #2 is not the pending one: #1 is"),
            (_decide("resume", handover_no=0), "say which handover you answer: --handover 1"),
            (_decide("skip"), "unknown decision 'skip'"),
            (Decision(decision="resume", by=" ", handover_no=1), "say who decides"),
            (_decide("undo", park=["INV-1"], note="x"), "--park goes with resume or retry"),
            (_decide("resume", park=["INV-1"]), "say why these invoices are parked"),
        ]:
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(NightlyReconciliation.decide, bad)
            assert reason in str(refused.value.cause), refused.value.cause
        assert await handle.query(NightlyReconciliation.decisions) == []
        assert await _status(handle) == "AwaitingDecision", "a refused decision changes nothing"

        await handle.signal(NightlyReconciliation.decide_signal,
                            Decision(decision="resume", by="ravi", handover_no=7))
        ignored = await _eventually(lambda: handle.query(NightlyReconciliation.ignored_decisions),
                                    "the ignored signal")
        assert (ignored[0].by, ignored[0].handover_no) == ("ravi", 7)
        assert "handover #7 is not the pending one" in ignored[0].reason
        memo = await _eventually(lambda: _memo_with(handle, "ignored_decisions"), "the memo")
        assert memo["ignored_decisions"][0]["reason"] == ignored[0].reason
        assert await _status(handle) == "AwaitingDecision", "an invalid signal decides nothing"

        await handle.signal(NightlyReconciliation.decide_signal, _decide("retry"))
        assert (await handle.result()).status == "Completed"
        assert night.standins.calls.count("post_adjustments") == 2


async def _memo_with(handle: WorkflowHandle, key: str) -> dict | None:
    memo = await (await handle.describe()).memo()
    return memo if memo.get(key) else None


async def test_the_gate_holds_the_notes_until_a_person_resumes(temporal_only: Client) -> None:
    async with night_with_standins(temporal_only) as night:
        night.standins.verdicts = [GateVerdict(reasons=["adjustments are 9% of the night, above 5%"])]
        handle = await night.start()
        note = await _handover(handle)
        assert (note.step, note.error_type) == ("gate_before_debit_notes", "UnclearEvidence")
        assert note.error_message == "adjustments are 9% of the night, above 5%"
        assert "send_debit_notes" not in night.standins.calls
        await handle.execute_update(NightlyReconciliation.decide, _decide("resume"))
        assert (await handle.result()).status == "Completed"
        calls = night.standins.calls
    assert calls[7:] == ["post_adjustments", "update_stock", "check_evidence", "record_handover",
                         "record_decision", *NOTES], "resume at the gate sends the notes"


async def test_retry_at_the_gate_looks_at_the_evidence_again(temporal_only: Client) -> None:
    async with night_with_standins(temporal_only) as night:
        night.standins.verdicts = [GateVerdict(reasons=["too many parked"]), GateVerdict()]
        handle = await night.start()
        await _handover(handle)
        await handle.execute_update(NightlyReconciliation.decide, _decide("retry"))
        assert (await handle.result()).status == "Completed"
        calls = night.standins.calls
    assert calls[9:] == ["check_evidence", "record_handover", "record_decision", "check_evidence",
                         *NOTES]


async def test_an_unverified_ledger_is_posted_again_before_any_note(temporal_only: Client) -> None:
    async with night_with_standins(temporal_only) as night:
        night.standins.verdicts = [GateVerdict(reasons=["ledger holds 1 of 2"], unverified=True)]
        handle = await night.start()
        await _handover(handle)
        await handle.execute_update(NightlyReconciliation.decide, _decide("resume"))
        assert (await handle.result()).status == "Completed"
        calls = night.standins.calls
    assert calls[7:] == [
        "post_adjustments", "update_stock", "check_evidence", "record_handover", "record_decision",
        "post_adjustments", "update_stock", "check_evidence", *NOTES,
    ], "notes never go out on an unverified ledger, whatever the decision"


async def test_a_redo_skips_the_reads_and_writes_under_the_nights_keys(temporal_only: Client) -> None:
    night_id = "recon-2026-10-13-redo1"
    async with night_with_standins(temporal_only) as night:
        handle = await night.start(warehouse="redo1", redo_of=night_id, redo_supplier="S001",
                                   redo_reason="prices fixed", redo_by="asha",
                                   redo_signed_at="2026-10-14T03:00:00+00:00",
                                   redo_signature=STANDIN_SIGNATURE)
        summary = await handle.result()
        standins: StandIns = night.standins
    assert handle.id == f"redo-{night_id}-g2"
    assert summary.status == "Completed"
    calls = [c for c in standins.calls if c != "check_evidence"]
    # Steps 1-6 are skipped; the redo weighs its scope again (what the undo opened) and posts.
    assert calls == ["weigh_again", *STEPS[6:]]
    assert (standins.inputs["weigh_again"][0].workflow_id,
            standins.inputs["weigh_again"][0].supplier_id) == (night_id, "S001")
    for name in ("post_adjustments", "update_stock"):
        job = standins.inputs[name][0]
        assert (job.workflow_id, job.supplier_id) == (night_id, "S001")
    for name in NOTES:
        assert standins.inputs[name][0].workflow_id == night_id
    assert standins.inputs["check_evidence"][0].supplier_id == "S001"
    [check] = standins.requests  # checked once, before anything else
    assert (check.purpose, check.target, check.run, check.supplier_id, check.by) == \
        ("recon-redo/1", handle.id, night_id, "S001", "asha")


async def test_going_on_without_named_invoices_parks_them_first(temporal_only: Client) -> None:
    async with night_with_standins(temporal_only) as night:
        night.standins.fail("post_adjustments", period_locked())
        handle = await night.start()
        await _handover(handle)
        await handle.execute_update(NightlyReconciliation.decide, _decide(
            "resume", park=["INV-7", "INV-9"], note="supplier disputes these"))
        assert (await handle.result()).status == "Completed"
        calls = night.standins.calls
    assert calls[7:11] == ["post_adjustments", "record_handover", "park_invoices", "record_decision"]
    assert calls[11] == "post_adjustments", "parking is explicit, and the step still runs again"
    parked = night.standins.inputs["park_invoices"][0]
    assert (parked.workflow_id, parked.handover_no, parked.invoices, parked.by, parked.reason) == \
        (handle.id, 1, ["INV-7", "INV-9"], "asha", "supplier disputes these")


async def test_undo_at_the_gate_sends_no_note(temporal_only: Client) -> None:
    async with night_with_standins(temporal_only) as night:
        night.standins.verdicts = [GateVerdict(reasons=["too many parked"])]
        handle = await night.start()
        await _handover(handle)
        await handle.execute_update(NightlyReconciliation.decide, _decide("undo"))
        assert (await handle.result()).status == "Undone"
        calls = night.standins.calls
    assert calls[calls.index("record_decision") + 1:] == [
        "open_next_generation", "withdraw_debit_notes", "reverse_stock_movements",
        "reverse_ledger_entries"]
    assert not set(NOTES) & set(calls)
    assert not night.standins.requests, "the night's own undo is authorised by its signed decision"


async def test_a_decision_is_taken_only_after_its_signature_check(temporal_only: Client) -> None:
    """The Update and the signal both ask `check_decision` before acting; a refusal leaves the
    run waiting (the Update fails in one line, the signal is kept as ignored); the decision on
    record is the checked one."""
    async with night_with_standins(temporal_only) as night:
        night.standins.verdicts = [GateVerdict(reasons=["adjustments too large"])]
        handle = await night.start()
        await _handover(handle)
        unsigned = Decision(decision="resume", by="asha", handover_no=1)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(NightlyReconciliation.decide, unsigned)
        assert "unsigned decision by 'asha'" in str(refused.value.cause)
        await handle.signal(NightlyReconciliation.decide_signal, unsigned)
        ignored = await _eventually(lambda: handle.query(NightlyReconciliation.ignored_decisions),
                                    "the ignored signal")
        assert "unsigned" in ignored[0].reason
        assert await _status(handle) == "AwaitingDecision"
        with pytest.raises(WorkflowUpdateFailedError) as too_long:
            await handle.execute_update(NightlyReconciliation.decide, _decide("resume",
                                                                                note="x" * 501))
        assert "--note is at most 500" in str(too_long.value.cause)
        await handle.execute_update(NightlyReconciliation.decide, _decide("resume", note="ok"))
        assert (await handle.result()).status == "Completed"
        checks = night.standins.checks
        decided = night.standins.inputs["record_decision"]
    assert [(c.via, c.signature != "") for c in checks] == [
        ("update", False), ("signal", False), ("update", True)], "no check for the too-long note"
    assert {c.workflow_id for c in checks} == {handle.id} and checks[0].received_at
    assert [(d.by, d.decision, d.note, d.confirmed_by) for d in decided] == [
        ("asha", "resume", "ok", "")]


async def test_an_undo_or_a_redo_is_checked_before_anything_and_a_refusal_does_nothing(
        temporal_only: Client) -> None:
    """Started straight on Temporal: unsigned, each ends failed (RequestRefused, ReconStatus
    Refused) before a single activity ran but the check; signed, the undo runs under the name
    the check answered."""
    async with night_with_standins(temporal_only) as night:
        redo = await night.start(warehouse="redo2", redo_of="recon-2026-10-13-redo2",
                                 redo_reason="again", redo_by="asha")
        with pytest.raises(WorkflowFailureError) as failed:
            await redo.result()
        assert isinstance(failed.value.cause, ApplicationError)
        assert failed.value.cause.type == "RequestRefused"
        assert "unsigned recon-redo/1" in failed.value.cause.message
        assert night.standins.calls == [] and len(night.standins.requests) == 1
        assert await _search_status(redo) == "Refused"

    async with night_with_standins(temporal_only) as night:
        run = "recon-2026-10-13-undo2"
        STANDINS.nights[run] = night.standins
        for signature in ("", STANDIN_SIGNATURE):
            request = UndoRequest(run_workflow_id=run, reason="wrong night", by="ravi",
                                  signed_at="2026-10-14T03:00:00+00:00", signature=signature)
            handle = await temporal_only.start_workflow(
                UndoReconciliation.run, request, id=request.workflow_id(), task_queue=TASK_QUEUE,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                execution_timeout=timedelta(minutes=1))
            if not signature:
                with pytest.raises(WorkflowFailureError, match="Workflow execution failed"):
                    await handle.result()
                assert night.standins.calls == [], "refused before anything was reversed"
                continue
            assert (await handle.result()).ledger_reversals == MISMATCHES
        assert [c.signature for c in night.standins.requests] == ["", STANDIN_SIGNATURE]
        assert night.standins.calls == ["open_next_generation", "withdraw_debit_notes",
                                        "reverse_stock_movements", "reverse_ledger_entries"]
        assert night.standins.inputs["reverse_ledger_entries"][0].by == "ravi"
