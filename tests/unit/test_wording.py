"""Counts read as sentences (issue 38: "1 debit notes", "1 bills", "1 requests")."""

from recon.domain.model_bill import ModelBill
from recon.domain.wording import count


def test_one_is_singular_and_others_plural() -> None:
    assert count(1, "debit note") == "1 debit note"
    assert count(0, "debit note") == "0 debit notes"
    assert count(2_500, "invoice") == "2,500 invoices"
    assert count(1, "entry") == "1 entry" and count(3, "entry") == "3 entries"


def test_the_model_bill_of_one_request_says_request() -> None:
    bill = ModelBill(answered=1, requests=1, errors=0, cancelled=0, lost=0, in_flight=0,
                     prompt_tokens=10, completion_tokens=5, cost_usd=0.0001)
    assert "for 1 request," in bill.line() and "1 answered" in bill.line()
