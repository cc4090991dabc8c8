"""Where a run takes decisions: the signature check, four eyes, and the record of refusals.

NightlyReconciliation's `decide` Update and `decide_signal` both come here once the cheap checks
of the validator (handing_over.why_not: the pending handover, shape, lengths) have passed. The
desk asks the `check_decision` activity (activities/approvals.py) whether the signature verifies
against an active approver in Postgres, how much money the decision puts at stake, and whether it
is within the approver's limit; only then is the decision taken. A refused decision leaves the
run waiting; it is on record in Postgres (`refused_decisions`, written by the activity) and, for
a signal, among the run's ignored decisions (memo: the last few and a count).

Four eyes (RECON_FOUR_EYES_PAISE): the first approval above the amount is kept here as pending;
it is taken when a second, different approver signs the same decision and park list.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.approvals import ApprovalActivities
    from recon.domain import approvals
    from recon.domain.models import Decision, IgnoredDecision
    from recon.domain.money import rupees
    from workflows import handing_over
    from workflows.policies import READ_TIMEOUT, RETRY

# Patches (workflow.patched): runs recorded before signed decisions replay as they were.
DECISIONS_ON_RECORD = "decisions-on-record"
SIGNED_DECISIONS = "signed-decisions"
BOUNDED_IGNORED = "bounded-ignored-decisions"


class DecisionDesk:
    """The state of decisions on the pending handover, and the rules that take one."""

    def __init__(self, workflow_id: str, night: str, supplier_id: str | None,
                 heartbeat_seconds: float) -> None:
        self._workflow_id = workflow_id
        self._night = night
        self._supplier_id = supplier_id
        self._heartbeat = timedelta(seconds=heartbeat_seconds)
        self.ignored: list[IgnoredDecision] = []
        self.ignored_count = 0
        self.first: Decision | None = None  # four eyes: the approval waiting for a second one
        self.confirmed_by = ""
        self.refused_here = 0  # refusals recorded on the pending handover

    def new_handover(self) -> None:
        self.first, self.confirmed_by, self.refused_here = None, "", 0

    def too_many_refused(self, handover_no: int) -> str | None:
        if self.refused_here >= approvals.MAX_REFUSED_PER_HANDOVER:
            return (f"{self.refused_here} decisions on handover #{handover_no} were refused "
                    f"already; no more are taken (the run keeps waiting for a signed one)")
        return None

    async def take(self, d: Decision, via: str,
                   why_not: Callable[[Decision], str | None]) -> tuple[Decision | None, str, bool]:
        """(the decision to act on, or None; the one line for whoever sent it; refused?).
        Neither taken nor refused: the first of two approvals, kept until a second one."""
        first = self.first
        check = approvals.DecisionCheck(
            check_id=str(workflow.uuid4()), workflow_id=self._workflow_id, night=self._night,
            execution=workflow.info().first_execution_run_id,
            supplier_id=self._supplier_id, handover_no=d.handover_no, via=via,
            received_at=workflow.now().isoformat(), decision=d.decision, by=d.by, note=d.note,
            park=sorted(set(d.park)), signed_at=d.signed_at, signature=d.signature,
            first_approver=first.by if first else "",
            first_decision=first.decision if first else "",
            first_park=list(first.park) if first else [],
        )
        try:
            verdict = await workflow.execute_activity_method(
                ApprovalActivities.check_decision, check, start_to_close_timeout=READ_TIMEOUT,
                heartbeat_timeout=self._heartbeat, retry_policy=RETRY,
                summary=f"check the signature of {d.decision} by {handing_over.cut(d.by, 64)}")
        except ActivityError as err:
            return None, f"the signature could not be checked: {err.cause or err}", True
        moved_on = why_not(d)  # another decision, or the run, may have moved on meanwhile
        if moved_on:
            return None, moved_on, True
        if verdict.refused:
            self.refused_here += 1
            return None, verdict.refused, True
        signed = d.model_copy(update={"by": verdict.approver, "park": sorted(set(d.park))})
        if verdict.first_of_two or verdict.confirms:
            return self._four_eyes(signed, verdict.stake_paise)
        if self.first is not None:  # another decision ends the wait for a second approver
            workflow.upsert_memo({"awaiting_second_approver": None})
        return signed, f"{d.decision} accepted for handover #{d.handover_no}", False

    def _four_eyes(self, d: Decision, stake: int) -> tuple[Decision | None, str, bool]:
        first = self.first
        if first is None:
            self.first = d
            workflow.upsert_memo({"awaiting_second_approver": {
                "handover": d.handover_no, "decision": d.decision, "by": d.by,
                "parked": d.park}})
            return None, (f"{d.decision} by {d.by} recorded for handover #{d.handover_no}: "
                          f"{rupees(stake)} at stake needs a second approver (four eyes)"), False
        if first.by == d.by:  # two checks of one approver raced
            return None, f"four eyes: {d.by} already approved handover #{d.handover_no}", True
        if (first.decision, first.park) != (d.decision, d.park):
            return None, (f"four eyes: {first.by} approved {first.decision}; a second approval "
                          f"must be the same decision"), True
        self.confirmed_by = d.by
        workflow.upsert_memo({"awaiting_second_approver": None})
        return first, (f"{d.decision} accepted for handover #{d.handover_no}: approved by "
                       f"{first.by}, confirmed by {d.by}"), False

    def ignore(self, d: Decision, reason: str) -> None:
        """A signal that cannot be taken stays on the run: the last few and a count."""
        self.ignored_count += 1
        self.ignored.append(IgnoredDecision(
            decision=handing_over.cut(d.decision, 16), by=handing_over.cut(d.by, approvals.MAX_BY),
            handover_no=d.handover_no, reason=handing_over.cut(reason, 400),
            received_at=workflow.now().isoformat(),
        ))
        if workflow.patched(BOUNDED_IGNORED):
            del self.ignored[:-approvals.IGNORED_KEPT]
            workflow.upsert_memo({"ignored_decisions": [i.model_dump() for i in self.ignored],
                                  "ignored_count": self.ignored_count})
            return
        if workflow.patched(DECISIONS_ON_RECORD):  # the older, unbounded memo of older runs
            workflow.upsert_memo({"ignored_decisions": [i.model_dump() for i in self.ignored]})

