"""Every `workflow.patched` id of the workflows, declared once: when it came and what it keeps.

A run replays its history against the code of whichever worker picks it up. Where a change alters
the commands a workflow issues, `workflow.patched(ID)` is true for runs started by the new code
(it records a marker with the id) and false when a history recorded before the change replays
(no marker): those runs take the old branch, which is what each entry's `keeps` describes.

An id is spelled here only, and never changed: a history holds the id's exact bytes, so a
respelled id sends a recorded run down the old branch. To retire a patch once no run older than
it can be open, replace `patched` with `workflow.deprecate_patch(ID)`, then remove both the call
and its entry (and the kept histories recorded before it). tests/unit/test_patches.py checks that
every id the workflows use is listed here and every listed one is used; tests/workflows/
test_histories.py replays every kept history in tests/histories/ against today's workflows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Patch:
    id: str
    added: str  # date of the commit that brought the id (`git log -m -S'ID' --reverse`)
    keeps: str  # what histories recorded before it still do on replay (the old branch)


RESUME_RERUNS_STEP = "resume-reruns-failed-step"
DECISIONS_ON_RECORD = "decisions-on-record"
CONSOLE_PATCH = "web-ui-console-1"
GENERATION_PATCH = "undo-opens-next-generation"
EXTRACT_WINDOW = "extract-sliding-window"
SIGNED_DECISIONS = "signed-decisions"
BOUNDED_IGNORED = "bounded-ignored-decisions"
SIGNED_REQUESTS = "signed-requests"
REDO_WEIGHS_AGAIN = "redo-weighs-again"
EXTRACT_FEWER = "extract-fewer-batches"
REFUSALS_NEVER_LOCK = "refusals-never-lock"
SOURCES_FETCH = "sources-fetch"
MODEL_BATCHES = "model-batches"
PASSKEYS_PAST_CAP = "passkeys-past-cap"
FAIR_WAREHOUSES = "fair-warehouses"
WEB_UI_WORDS = "web-ui-words"

PATCHES: tuple[Patch, ...] = (
    Patch(RESUME_RERUNS_STEP, "2026-11-29",
          "resume takes a failed step as it stood (no summary: one is built from progress), and "
          "resume at the gate sends the notes even on an unverified ledger"),
    Patch(DECISIONS_ON_RECORD, "2026-11-29",
          "an ignored decision signal is logged only, not written to the memo"),
    Patch(CONSOLE_PATCH, "2026-11-29",
          "the gate sets no ReconStep; no decisions record and no headline in the memo"),
    Patch(GENERATION_PATCH, "2026-11-29",
          "an undo raises no next generation (no open_next_generation activity)"),
    Patch(EXTRACT_WINDOW, "2026-12-01",
          "step 2 in waves of 16 batches, each wave settled before the next; at most 400 "
          "extraction activities"),
    Patch(SIGNED_DECISIONS, "2026-12-01",
          "a decision (Update or signal) is taken as sent: no check_decision activity, no four eyes"),
    Patch(BOUNDED_IGNORED, "2026-12-01",
          "the memo holds every ignored decision and no count (the decisions-on-record memo)"),
    Patch(SIGNED_REQUESTS, "2026-12-01",
          "an undo or a redo starts without a signed request (no check_signed_request activity)"),
    Patch(REDO_WEIGHS_AGAIN, "2026-12-01",
          "a redo posts without weighing its scope again (no weigh_again before step 7)"),
    Patch(EXTRACT_FEWER, "2026-12-03",
          "step 2 in a sliding window of at most 100 extraction activities (50 since)"),
    Patch(REFUSALS_NEVER_LOCK, "2026-12-06",
          "after MAX_REFUSED_PER_HANDOVER refused decisions on a handover no decision is taken "
          "(no approver_keys activity, no check of the signature in the workflow)"),
    Patch(SOURCES_FETCH, "2026-12-07",
          "step 1 fixes the night from what was imported by hand only (no fetch_sources activity "
          "before fetch_invoices)"),
    Patch(MODEL_BATCHES, "2026-12-07",
          "step 2 asks every invoice interactively, whatever RECON_MODEL_MODE says (asked only in "
          "batch mode, so interactive histories carry no marker)"),
    Patch(PASSKEYS_PAST_CAP, "2026-12-07",
          "past the refusal cap, a decision carrying a passkey assertion is screened as an Ed25519 "
          "one (no approver_passkeys activity): only a history that received one past the cap has "
          "the marker"),
    Patch(FAIR_WAREHOUSES, "2026-12-07",
          "the night's activities carry no priority (no fairness key: a task queue shared by many "
          "warehouses' nights hands out their tasks first come, first served)"),
    Patch(WEB_UI_WORDS, "2026-12-07",
          "the memo's headline holds figures and adjustment_total_paise (no sentence, no ₹), the "
          "result has no in_words; an undo writes no memo, and one a night starts for itself "
          "carries no ReconWarehouse/ReconDate"),
)
