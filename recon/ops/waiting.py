"""Waiting for a run from the command line without hanging on a person.

`recon run --wait` and `recon redo` wait for the run's result, but a run that comes to need a
decision waits as long as it takes. So the wait also watches the run's business status (the
`ReconStatus` search attribute the workflow keeps): within a second or two of a handover it
returns the pending note instead of hanging.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from temporalio.client import WorkflowHandle

from recon.domain.labels import RECON_STATUS, RunStatus

POLL_SECONDS = 0.5

# Exit code of `recon run --wait` / `recon redo` when the run stopped to wait for a person.
AWAITING_DECISION_EXIT = 3


@dataclass(frozen=True)
class AwaitingDecision:
    workflow_id: str
    handover_no: int
    step: str
    reason: str

    def line(self) -> str:
        return (f"run {self.workflow_id} awaits a decision on handover #{self.handover_no} "
                f"({self.step}): {self.reason}; read the note with "
                f"`recon handover {self.workflow_id}`")


async def result_or_handover(handle: WorkflowHandle, result_type: Any) -> Any | AwaitingDecision:
    """The run's result, or the pending handover as soon as the run waits for a person."""
    result = asyncio.ensure_future(handle.result())
    try:
        while True:
            done, _ = await asyncio.wait({result}, timeout=POLL_SECONDS)
            if done:
                value = result.result()
                if isinstance(value, dict) and hasattr(result_type, "model_validate"):
                    return result_type.model_validate(value)
                return value
            description = await handle.describe()
            if description.typed_search_attributes.get(RECON_STATUS) != RunStatus.AWAITING_DECISION:
                continue
            note = await _pending(handle)
            if note is not None:
                return note
    finally:
        if not result.done():
            result.cancel()


async def _pending(handle: WorkflowHandle) -> AwaitingDecision | None:
    from recon.domain.models import HandoverNote

    try:
        note = await handle.query("pending_handover", result_type=HandoverNote | None)
    except Exception:  # no worker answered the query yet: look again on the next poll
        return None
    if note is None:
        return None
    reason = f"{note.error_type}: {note.error_message}".splitlines()[0][:300]
    return AwaitingDecision(handle.id, note.handover_no, note.step, reason)
