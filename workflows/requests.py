"""Where an undo or a redo proves who asked for it, before it does anything.

An undo started on Temporal by anyone (the CLI, the Web UI, a bare `temporal workflow start`),
and a redo (NightlyReconciliation with `redo_of`), carry a signed request; the
`check_signed_request` activity (activities/requests.py) checks it in Postgres. A refused request
ends the workflow at once as failed, with the reason in one line (ApplicationError type
RequestRefused) and ReconStatus "Refused": nothing was posted, booked or mailed, and the refusal
is on record in `refused_requests`.

The one undo that carries no signature is the one a night starts for itself, as its child, after
a person's signed `undo` decision on its handover was checked and taken. Its parent's id only
spares it a signature check it would fail: a parent's id is whatever its starter chose. What
authorises it is the decision's verified signature on record, which every undo activity looks
for in Postgres (recon/store/mandates.py); an undo under any other parent finds none, and every
activity that moves money without a mandate ends the workflow refused (`refuse_without_mandate`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.requests import RequestActivities
    from recon.domain.errors import MandateRefused
    from recon.domain.keys import is_redo_of
    from recon.domain.labels import RECON_STATUS, RunStatus
    from recon.domain.models import PasskeyProof, Progress
    from recon.domain.requests import WHAT, RequestCheck
    from workflows.policies import READ_TIMEOUT, RETRY

REFUSED_TYPE = "RequestRefused"
MANDATE_REFUSED = MandateRefused.__name__  # the activity's error type (activities/step.py)


def started_by_its_night(run: str) -> bool:
    """An undo that says the night (or a redo of it) started it, after a signed decision: it
    skips the request check, and proves nothing (its activities' mandates decide)."""
    parent = workflow.info().parent
    return parent is not None and (parent.workflow_id == run or is_redo_of(parent.workflow_id, run))


def refuse_without_mandate(err: ActivityError, progress: Progress | None = None) -> None:
    """An activity that moves money found no mandate in Postgres for what it was asked
    (recon/store/mandates.py): the run ends refused, in one line, as a refused request does.
    Any other failure returns (a handover, or the workflow's failure). Kept histories hold no
    such failure, so they replay unchanged."""
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.type == MANDATE_REFUSED:
        refuse(cause.message, progress)


def refuse(line: str, progress: Progress | None = None) -> NoReturn:
    if progress is not None:
        progress.status = RunStatus.REFUSED.value
    workflow.upsert_search_attributes([RECON_STATUS.value_set(RunStatus.REFUSED.value)])
    raise ApplicationError(line, type=REFUSED_TYPE, non_retryable=True)


async def checked_signer(purpose: str, *, run: str, supplier_id: str | None,
                         references: list[str], reason: str, by: str, signed_at: str,
                         signature: str, heartbeat_seconds: float,
                         progress: Progress | None = None,
                         passkey: PasskeyProof | None = None) -> str:
    """The approver who signed this request (the name that goes on record); a refused request
    ends the workflow here (`refuse`)."""
    info = workflow.info()
    check = RequestCheck(
        check_id=str(workflow.uuid4()), purpose=purpose, target=info.workflow_id,
        execution=info.first_execution_run_id, run=run, supplier_id=supplier_id,
        references=list(references), reason=reason, by=by, signed_at=signed_at,
        signature=signature, passkey=passkey, received_at=workflow.now().isoformat())
    try:
        verdict = await workflow.execute_activity_method(
            RequestActivities.check_signed_request, check, start_to_close_timeout=READ_TIMEOUT,
            heartbeat_timeout=timedelta(seconds=heartbeat_seconds), retry_policy=RETRY,
            summary=f"check the signature of the {WHAT.get(purpose, purpose)}")
    except ActivityError as err:
        refuse(f"the signature could not be checked: {err.cause or err}", progress)
    if verdict.refused:
        refuse(verdict.refused, progress)
    return verdict.approver
