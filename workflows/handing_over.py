"""The rules of a handover, as pure functions of what the run knows (docs/design.md §3): which
decision can be taken, how a failed step is described to a person, how many attempts it made,
when the next morning reminder is due. NightlyReconciliation asks these; they decide nothing
else, read no clock of their own and do no I/O, so they are safe in workflow code.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio.exceptions import ActivityError, ApplicationError

from recon.domain import approvals
from recon.domain.models import DECISIONS, Decision, HandoverNote, RecordedDecision

GATE_NEXT_ACTION = ("send the debit notes (resume), check the evidence again (retry), "
                    "or undo the run (undo)")


def why_not(d: Decision, pending_note: HandoverNote | None, taken: Decision | None,
            decided: list[RecordedDecision], workflow_id: str) -> str | None:
    """Why a decision cannot be taken, or None. A decision names the handover it answers:
    one for any other handover (an old one, or one nobody has read yet) is refused."""
    if pending_note is None:
        if decided:
            last = decided[-1]
            return (f"handover #{last.handover_no} was already decided: {last.decision} "
                    f"by {last.by}; no handover is pending now")
        return "no handover is pending for this run"
    pending = pending_note.handover_no
    if d.handover_no != pending:
        if not d.handover_no:
            return f"say which handover you answer: --handover {pending} is pending"
        return (f"handover #{d.handover_no} is not the pending one: #{pending} is "
                f"(read it with `recon handover {workflow_id}`)")
    if taken is not None:
        return f"handover #{pending} was already decided"
    if d.decision not in DECISIONS:
        return f"unknown decision {d.decision!r}: use one of {', '.join(DECISIONS)}"
    if not d.by.strip():
        return "say who decides (--by NAME)"
    bounds = out_of_bounds(d)
    if bounds:
        return bounds
    if d.park and d.decision == "undo":
        return "--park goes with resume or retry: an undo reverses the whole run anyway"
    if d.park and not d.note.strip():
        return "say why these invoices are parked (--note REASON)"
    return None


def _has_control(text: str, allowed: str = "") -> bool:
    return any((ord(c) < 32 or 127 <= ord(c) < 160) and c not in allowed for c in text)


def out_of_bounds(d: Decision) -> str | None:
    """The validator's cheap checks of size and shape (approvals.MAX_*), the same from every
    client: nothing longer than the bounds reaches the history, the memo or Postgres."""
    if len(d.by) > approvals.MAX_BY or _has_control(d.by):
        return f"--by must be an approver's name: at most {approvals.MAX_BY} characters, no " \
               f"control characters"
    if len(d.note) > approvals.MAX_NOTE or _has_control(d.note, "\n\t"):
        return f"--note is at most {approvals.MAX_NOTE} characters, no control characters " \
               f"(got {len(d.note)})"
    if len(d.park) > approvals.MAX_PARK:
        return f"--park at most {approvals.MAX_PARK} invoices in one decision (got {len(d.park)})"
    for invoice in d.park:
        if not invoice.strip() or len(invoice) > approvals.MAX_INVOICE_NO or _has_control(invoice):
            return f"--park takes invoice numbers of 1 to {approvals.MAX_INVOICE_NO} characters"
    if len(d.signature) > approvals.MAX_SIGNATURE or len(d.signed_at) > approvals.MAX_SIGNED_AT:
        return "the signature or its time is not one `recon approve` makes"
    return None


def cut(text: str, limit: int) -> str:
    """A field of a refused decision as it may be kept (memo, Postgres): bounded."""
    return text if len(text) <= limit else text[:limit] + "…"


def describe_failure(step: str, err: ActivityError) -> tuple[str, str, str]:
    """(error type, message, what the agent would do next) of a step that failed for good."""
    cause = err.cause
    error_type = cause.type if isinstance(cause, ApplicationError) and cause.type else \
        type(cause).__name__ if cause else "ActivityError"
    message = cause.message if isinstance(cause, ApplicationError) else \
        str(cause) if cause else str(err)
    next_action = (
        f"run {step} again from its last committed entry, once the cause is fixed "
        f"(retry or resume: nothing already posted is posted twice, nothing missing is "
        f"skipped; add --park INVOICE --note WHY to go on without named invoices), or "
        f"undo the run (undo)"
    )
    return error_type, message, next_action


def attempts_of(err: ActivityError | None) -> int:
    """How many attempts the failed step made, as business_step put it in the error."""
    if err is None:
        return 0
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.details:
        detail = cause.details[0]
        if isinstance(detail, dict) and "attempt" in detail:
            return int(detail["attempt"])
    return 1


def until_next_morning(now: datetime, reminder_utc_time: str) -> timedelta:
    """How long until the next reminder (HH:MM[:SS] UTC), from the workflow's `now`."""
    hour, minute, second = (int(part) for part in
                            (reminder_utc_time.split(":") + ["0", "0"])[:3])
    morning = now.replace(hour=hour, minute=minute, second=second, microsecond=0)
    if morning <= now:
        morning += timedelta(days=1)
    return morning - now
