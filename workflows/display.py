"""What people see of a running night, written from workflow code: the business status and step
(search attributes ReconStatus, ReconStep), the Web UI's current details and the memo. The text
comes from workflows/console.py; these only put it where Temporal shows it, at the same points
of the run as always (the `workflow.patched` calls included), so recorded histories replay.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from recon.domain.labels import RECON_STATUS, RECON_STEP, RunStatus
    from recon.domain.models import HandoverNote, Progress, RecordedDecision
    from workflows import console
    from workflows.patches import (
        CONSOLE_PATCH,  # gate as ReconStep, headline and decisions in the memo
        WEB_UI_WORDS,  # the headline in words and ₹, not paise
    )


def set_status(progress: Progress, status: RunStatus) -> None:
    progress.status = status.value
    workflow.upsert_search_attributes([RECON_STATUS.value_set(status.value)])


def show_step(name: str, progress: Progress) -> None:
    workflow.set_current_details(console.step_details(name, progress))


def enter_step(progress: Progress, name: str, gate: bool = False) -> None:
    """The step people see: progress query, ReconStep, current details. The gate is a step
    of its own in ReconStep too (newer runs only: an older history did not record it)."""
    progress.current_step = name
    if not gate or workflow.patched(CONSOLE_PATCH):
        workflow.upsert_search_attributes([RECON_STEP.value_set(name)])
    show_step(name, progress)


def show_waiting(handover: HandoverNote | None, progress: Progress) -> None:
    if handover is not None:
        workflow.set_current_details(console.waiting_details(
            handover.handover_no, handover.step, handover.error_type, handover.error_message,
            progress))


def remember_decisions(decided: list[RecordedDecision]) -> None:
    """The record of decisions stays in the memo after the run moves on."""
    if workflow.patched(CONSOLE_PATCH):
        workflow.upsert_memo({"decisions": console.decision_record(decided)})


def show_finished(status: RunStatus, progress: Progress, adjustment_total_paise: int | None,
                  totals: dict[str, int] | None = None, undone: str = "the whole night") -> str:
    """The night's last details and memo headline; returns the night in words for its result
    ("" for a run recorded before the words, whose headline keeps its figures in paise)."""
    workflow.set_current_details(console.finished_details(status.value, progress, totals, undone))
    words = ""
    if workflow.patched(CONSOLE_PATCH):
        if workflow.patched(WEB_UI_WORDS):
            words = console.night_in_words(status.value, progress, totals, undone)
            workflow.upsert_memo({"headline": console.headline_in_words(
                status.value, progress, totals, undone)})
        else:
            workflow.upsert_memo({"headline": console.headline(
                status.value, progress, adjustment_total_paise)})
    return words
