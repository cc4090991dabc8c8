"""Invoice references (recon/domain/keys.py): an invoice is its supplier's number, and nights
posted before references (bare numbers) are still read right."""

from __future__ import annotations

from recon.domain.keys import (
    INVOICE_REF,
    adjustment_key,
    invoice_label,
    invoice_ref,
    movement_key,
    number_of,
    parked_item_key,
    row_template,
    split_ref,
)

WF = "recon-2026-10-13-ldh"


def test_a_reference_is_the_supplier_and_its_number() -> None:
    assert invoice_ref("S001", "INV-7001") == "S001:INV-7001"
    assert invoice_ref("S001", "INV-7001") != invoice_ref("S002", "INV-7001")
    assert row_template(INVOICE_REF) == "%s:%s", "Postgres builds the same text per row"


def test_both_shapes_split() -> None:
    assert split_ref("S001:INV-7001") == ("S001", "INV-7001")
    assert split_ref("INV-7001") == (None, "INV-7001"), "a night posted before references"
    assert number_of("S002:INV-7001") == "INV-7001"
    assert number_of("INV-20261013-LDH-00001") == "INV-20261013-LDH-00001"


def test_a_number_may_hold_colons_of_its_own() -> None:
    ref = invoice_ref("S001", "2026:A:17")
    assert split_ref(ref) == ("S001", "2026:A:17"), "a supplier id holds no colon"
    assert number_of(ref, "S001") == "2026:A:17"


def test_the_rows_supplier_settles_an_old_number_with_a_colon() -> None:
    # Old row of supplier S001 whose number itself was "A:17": without the supplier the first
    # part would look like a supplier id; with it, only the supplier's own prefix counts.
    assert split_ref("A:17", "S001") == (None, "A:17")
    assert number_of("S001:A:17", "S001") == "A:17"
    assert split_ref("INV 7", None) == (None, "INV 7")
    assert split_ref(":7") == (None, ":7") and split_ref("S001:") == (None, "S001:")


def test_labels_finance_reads() -> None:
    assert invoice_label("S001:INV-7001") == "INV-7001 (S001)"
    assert invoice_label("INV-7001") == "INV-7001"
    assert invoice_label("S001:INV-7001", "S001") == "INV-7001 (S001)"


def test_keys_keep_their_shape_and_carry_the_supplier() -> None:
    a, b = invoice_ref("S001", "INV-7001"), invoice_ref("S002", "INV-7001")
    assert adjustment_key(WF, a, 1, "qty") == f"{WF}:S001:INV-7001:1:qty"
    assert adjustment_key(WF, a, 1, "qty") != adjustment_key(WF, b, 1, "qty")
    assert movement_key(WF, b, 2) == f"{WF}:stock:S002:INV-7001:2"
    assert parked_item_key(a) == "invoice:S001:INV-7001"
    assert parked_item_key(b, 3) == "line:S002:INV-7001:3"
    # and a night posted before references keeps its keys exactly
    assert adjustment_key(WF, "INV-7001", 1, "qty") == f"{WF}:INV-7001:1:qty"
