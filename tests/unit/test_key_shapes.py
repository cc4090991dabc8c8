"""Key shapes (docs/design.md §1): every key starts with the night's workflow id, one key per
action, and no two actions ever share a key. The SQL twin of `generation_key` is checked
against Postgres in tests/test_keys.py."""

from __future__ import annotations

import itertools

import pytest

from recon.keys import generation_key, redo_workflow_id
from recon.models import UndoRequest, undo_workflow_id, workflow_id_for
from recon.store.ledger import adjustment_key
from recon.store.outbox import debit_note_key, summary_key
from recon.store.stock import movement_key

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
    assert undo_workflow_id(whole) == f"undo-{WF}"
    assert undo_workflow_id(supplier) == f"undo-{WF}-supplier-S007"
    assert undo_workflow_id(refs) == undo_workflow_id(same_refs), "order and repeats do not matter"
    assert undo_workflow_id(refs).startswith(f"undo-{WF}-refs-")
    assert len({undo_workflow_id(r) for r in (whole, supplier, refs)}) == 3
