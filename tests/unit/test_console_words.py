"""The Web UI's sentences (workflows/console.py): ₹ in Indian grouping, currencies never added,
counts in the singular for one, and no amount in paise in the memo's headline."""

from __future__ import annotations

import json

from recon.domain.models import Progress, UndoResult
from workflows.console import headline_in_words, night_in_words, undo_in_words


def test_a_completed_night_in_words_groups_lakhs_and_keeps_currencies_apart() -> None:
    p = Progress(workflow_id="n", invoices=40, parked=1, ledger_posted=4, debit_notes=2)
    lakhs = 6 * 10**5
    said = night_in_words("Completed", p, {"INR": lakhs * 100, "EUR": 7833})
    assert said == "Completed: 4 claims, ₹6,00,000, €78.33 adjusted, 2 debit notes, 1 invoice parked"
    headline = headline_in_words("Completed", p, {"INR": lakhs * 100})
    assert headline["adjusted"] == "₹6,00,000" and headline["night"].startswith("Completed: 4")
    assert "paise" not in json.dumps(headline) and str(lakhs * 100) not in json.dumps(headline)


def test_an_undo_in_words_names_its_night_and_scope() -> None:
    result = UndoResult(undo_workflow_id="undo-n-supplier-S1", withdrawals=1, stock_reversals=2,
                        ledger_reversals=1, reversed_paise=1_23_45_678_90)
    assert undo_in_words("n", "supplier S1", result) == (
        "Undone: n (supplier S1): 1 ledger entry reversed (₹1,23,45,678.90 in ₹), "
        "2 stock movements reversed, 1 debit note withdrawn")
