"""The night's steps, in one table: their order, their names (activity name, ReconStep value and
the progress query's `steps_done`), the numbers and titles people read, and which progress
figures each step's result sets (docs/design.md §1).

The workflow walks this table, the Web UI console titles its steps from it, `recon demo` and the
benches list it. Activity names are part of recorded histories: never rename a step.
Pure (no I/O, no clock): workflow code uses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Step:
    name: str
    number: int  # as people count the steps: 1-10 (the gate is checked within step 8's number)
    title: str
    # (progress field, result attribute): what the step's result sets in `Progress`
    figures: tuple[tuple[str, str], ...] = ()
    parked: str | None = None  # "set" or "add": the result's `parked` into Progress.parked
    gate: bool = False  # a check between steps, not an activity of its own name


# Step 1's first half, before the night is fixed: not in TABLE (whose order recorded histories
# replay), run by the workflow under the `sources-fetch` patch (workflows/patches.py).
FETCH_SOURCES = Step("fetch_sources", 1, "fetching from the sources")
FETCH_INVOICES = Step("fetch_invoices", 1, "fetching invoices", (("invoices", "count"),))
EXTRACT_LINES = Step("extract_lines", 2, "extracting lines", (("extracted", "count"),), "set")
MATCH_ORDERS = Step("match_orders", 3, "matching purchase orders", (("matched", "count"),),
                    "add")
READ_STOCK = Step("read_stock", 4, "reading stock")
COMPARE_QUANTITIES = Step("compare_quantities", 5, "comparing quantities and prices")
FLAG_MISMATCHES = Step("flag_mismatches", 6, "flagging mismatches", (("mismatches", "count"),))
POST_ADJUSTMENTS = Step("post_adjustments", 7, "posting ledger adjustments",
                        (("ledger_posted", "expected"),))
UPDATE_STOCK = Step("update_stock", 8, "updating stock", (("stock_moved", "expected"),))
GATE = Step("gate_before_debit_notes", 8, "checking the evidence before debit notes", gate=True)
SEND_DEBIT_NOTES = Step("send_debit_notes", 9, "sending debit notes", (("debit_notes", "count"),))
SEND_SUMMARY = Step("send_summary", 10, "sending the summary")

TABLE: tuple[Step, ...] = (
    FETCH_INVOICES, EXTRACT_LINES, MATCH_ORDERS, READ_STOCK, COMPARE_QUANTITIES, FLAG_MISMATCHES,
    POST_ADJUSTMENTS, UPDATE_STOCK, GATE, SEND_DEBIT_NOTES, SEND_SUMMARY,
)
STEP_COUNT = max(s.number for s in TABLE)
# Steps 1-6 read and compare; a redo finds their results in Postgres and starts at step 7.
READ_AND_COMPARE: tuple[Step, ...] = tuple(s for s in TABLE if s.number <= 6)
STEPS: list[str] = [s.name for s in TABLE if not s.gate]  # the activities, in step order
BY_NAME: dict[str, Step] = {s.name: s for s in TABLE}


def record(progress: Any, step: Step, result: Any) -> None:
    """Put a step's result into the run's progress. No result (a step a person accepted as it
    stood, in histories recorded before that was withdrawn) leaves the figures as they were."""
    if result is None:
        return
    for field, attribute in step.figures:
        setattr(progress, field, getattr(result, attribute))
    if step.parked == "set":
        progress.parked = result.parked
    elif step.parked == "add":
        progress.parked += result.parked
