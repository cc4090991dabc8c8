"""The step table (recon/domain/steps.py) is the one source of the step order, names, numbers and the
progress figures: the workflow, the console and the worker's activities all agree with it."""

from __future__ import annotations

from recon.domain import steps
from recon.domain.models import Count, PostResult, Progress
from recon.domain.steps import STEPS
from workflows.console import STEP_TITLES


def test_the_ten_steps_in_their_order() -> None:
    assert STEPS == steps.STEPS == [
        "fetch_invoices", "extract_lines", "match_orders", "read_stock", "compare_quantities",
        "flag_mismatches", "post_adjustments", "update_stock", "send_debit_notes", "send_summary",
    ]
    assert [s.number for s in steps.TABLE if not s.gate] == list(range(1, 11))
    assert steps.STEP_COUNT == 10


def test_every_figure_a_step_sets_is_a_progress_field() -> None:
    fields = set(Progress.model_fields)
    for step in steps.TABLE:
        for field, _attribute in step.figures:
            assert field in fields, (step.name, field)


def test_the_console_titles_every_step_from_the_table() -> None:
    assert STEP_TITLES["gate_before_debit_notes"] == (8, "checking the evidence before debit notes")
    # Step 1's fetch from the sources runs before the table's steps (outside it: histories).
    assert set(STEP_TITLES) == {s.name for s in steps.TABLE} | {steps.FETCH_SOURCES.name}
    assert STEP_TITLES["fetch_sources"] == (1, "fetching from the sources")


def test_a_result_sets_its_figures() -> None:
    p = Progress(workflow_id="w")
    steps.record(p, steps.EXTRACT_LINES, Count(count=7, parked=2))
    steps.record(p, steps.MATCH_ORDERS, Count(count=5, parked=1))
    steps.record(p, steps.POST_ADJUSTMENTS, PostResult(expected=4, inserted=4, already_there=0))
    steps.record(p, steps.SEND_DEBIT_NOTES, None)  # a step accepted as it stood: unchanged
    assert (p.extracted, p.matched, p.parked, p.ledger_posted, p.debit_notes) == (7, 5, 3, 4, 0)
