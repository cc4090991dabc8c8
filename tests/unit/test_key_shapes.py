"""Key shapes (docs/design.md §1): every key starts with the night's workflow id, one key per
action, and no two actions ever share a key. The SQL twin of `generation_key` is checked
against Postgres in tests/store/test_keys.py."""

from __future__ import annotations

import itertools

import pytest

from recon.domain.keys import (
    ADJUSTMENT,
    MOVEMENT,
    PARKED_LINE,
    adjustment_key,
    debit_note_key,
    extract_fence_store,
    fence_scope,
    generation_key,
    handover_key,
    movement_key,
    parked_item_key,
    redo_workflow_id,
    reminder_key,
    row_template,
    scoped_summary_key,
    summary_key,
    undo_key,
    withdrawal_key,
    workflow_id_for,
)
from recon.domain.models import UndoRequest

WF = "recon-2026-10-13-ldh"


def test_the_night_has_one_workflow_id() -> None:
    assert workflow_id_for("2026-10-13", "ldh") == WF


def test_each_store_key_has_its_documented_shape() -> None:
    assert adjustment_key(WF, "INV-1", 2, "qty") == f"{WF}:INV-1:2:qty"
    assert adjustment_key(WF, "INV-1", 2, "price") == f"{WF}:INV-1:2:price"
    assert movement_key(WF, "INV-1", 2) == f"{WF}:stock:INV-1:2"
    assert debit_note_key(WF, "S001") == f"{WF}:debit-note:S001"
    assert summary_key(WF) == f"{WF}:summary"


def test_no_two_actions_of_a_night_share_a_key() -> None:
    keys = [summary_key(WF)]
    for invoice, line in itertools.product(("INV-1", "INV-2", "stock"), (1, 2, 12)):
        keys += [adjustment_key(WF, invoice, line, kind) for kind in ("qty", "price")]
        keys.append(movement_key(WF, invoice, line))
    keys += [debit_note_key(WF, s) for s in ("S001", "S002", "summary")]
    assert len(keys) == len(set(keys))
    assert all(k.startswith(f"{WF}:") for k in keys), "every key starts with the workflow id"


def test_another_night_never_collides() -> None:
    other = "recon-2026-10-14-ldh"
    assert adjustment_key(WF, "INV-1", 1, "qty") != adjustment_key(other, "INV-1", 1, "qty")
    assert summary_key(WF) != summary_key(other)


@pytest.mark.parametrize("generation", [-1, 0, 1])
def test_generation_one_and_below_keep_the_original_shape(generation: int) -> None:
    base = adjustment_key(WF, "INV-1", 2, "qty")
    assert generation_key(base, generation) == base


def test_later_generations_carry_a_suffix_and_never_collide() -> None:
    base = movement_key(WF, "INV-1", 2)
    assert generation_key(base, 2) == f"{base}:g2"
    assert generation_key(base, 11) == f"{base}:g11"
    keys = {generation_key(base, g) for g in range(1, 30)}
    assert len(keys) == 29


def test_redo_ids_carry_scope_and_generation() -> None:
    assert redo_workflow_id(WF, None, 2) == f"redo-{WF}-g2"
    assert redo_workflow_id(WF, "S042", 3) == f"redo-{WF}-supplier-S042-g3"
    assert redo_workflow_id(WF, "S042", 3) != redo_workflow_id(WF, "S042", 4)
    assert redo_workflow_id(WF, None, 2) != redo_workflow_id(WF, "S042", 2)


def test_the_same_undo_is_the_same_workflow() -> None:
    whole = UndoRequest(run_workflow_id=WF, reason="x", by="asha")
    supplier = UndoRequest(run_workflow_id=WF, supplier_id="S007", reason="y", by="ravi")
    refs = UndoRequest(run_workflow_id=WF, references=["b", "a", "a"], reason="z", by="me")
    same_refs = UndoRequest(run_workflow_id=WF, references=["a", "b"], reason="other", by="you")
    assert whole.workflow_id() == f"undo-{WF}"
    assert supplier.workflow_id() == f"undo-{WF}-supplier-S007"
    assert refs.workflow_id() == same_refs.workflow_id(), "order and repeats do not matter"
    assert refs.workflow_id().startswith(f"undo-{WF}-refs-")
    assert len({r.workflow_id() for r in (whole, supplier, refs)}) == 3


def test_the_other_key_shapes_are_as_they_always_were() -> None:
    assert handover_key(WF, 3) == f"{WF}:handover:3"
    assert reminder_key(WF, 3, 2) == f"{WF}:handover:3:reminder:2"
    assert parked_item_key("INV-1") == "invoice:INV-1"
    assert parked_item_key("INV-1", 4) == "line:INV-1:4"
    assert fence_scope(WF, "ledger") == f"{WF}:ledger"
    assert fence_scope(WF, extract_fence_store(51, 100)) == f"{WF}:extract:51-100"
    assert undo_key(f"{WF}:INV-1:2:qty") == f"undo:{WF}:INV-1:2:qty"
    note = debit_note_key(WF, "S001")
    assert withdrawal_key(note) == f"undo:{note}"
    assert withdrawal_key(note, ("b", "a")) == withdrawal_key(note, ["a", "b"])
    assert withdrawal_key(note, ("a",)).startswith(f"undo:{note}:refs-")
    assert scoped_summary_key(summary_key(WF), None) == f"{WF}:summary"
    assert scoped_summary_key(generation_key(summary_key(WF), 2), "S9") == f"{WF}:summary:g2:S9"


def test_a_row_template_is_the_shape_with_the_fixed_fields_filled_in() -> None:
    assert row_template(MOVEMENT, workflow_id=WF) == f"{WF}:stock:%s:%s"
    assert row_template(ADJUSTMENT, workflow_id="a%b") == "a%%b:%s:%s:%s"
    assert row_template(PARKED_LINE) == "line:%s:%s"
