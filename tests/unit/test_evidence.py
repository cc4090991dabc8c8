"""A model's answer checked against its document (recon/documents/extraction/evidence.py)."""

from __future__ import annotations

import pytest

from recon.documents.extraction.evidence import disagreement
from recon.documents.extraction.numbers import readings
from recon.documents.extraction.offline import parse_document
from recon.documents.extraction.schema import ExtractedInvoice, ExtractedLine
from recon.documents.layouts import LAYOUTS, Document, DocumentLine, render
from recon.tools.seed import night_chunks
from recon.tools.seed_plan import plan_night

DOC = Document("INV-7", "S001", "Sharma Foods Pvt Ltd", "2026-10-13", "PO-77", [
    DocumentLine("SKU-L1", "Widget", 80, 1250),
    DocumentLine("SKU-L10", "Gadget", 3, 1_25_000_00),
])


def _answer(*lines: tuple[str, int, int], po: str | None = "PO-77",
            invoice: str = "INV-7") -> ExtractedInvoice:
    return ExtractedInvoice(invoice_no=invoice, supplier_id="S001", po_number=po, lines=[
        ExtractedLine(line_no=n, sku=sku, description="", quantity=qty, unit_price_paise=price)
        for n, (sku, qty, price) in enumerate(lines, 1)])


HONEST = _answer(("SKU-L1", 80, 1250), ("SKU-L10", 3, 1_25_000_00))


def _paise_on(line: str) -> set[int]:
    return {r[2] for r in readings(line)}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_honest_reading_of_every_layout_agrees(layout: str) -> None:
    assert disagreement(HONEST, render(DOC, layout)) is None


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_lying_model_disagrees_with_both_readings(layout: str) -> None:
    """The document bills 80; the model says 40 (what was received): parked, never reconciled."""
    lie = _answer(("SKU-L1", 40, 1250), ("SKU-L10", 3, 1_25_000_00))
    found = disagreement(lie, render(DOC, layout))
    assert found is not None
    assert "the model read 40 × SKU-L1 at ₹12.50" in found.reason
    assert "80" in found.reason and "SKU-L1" in found.evidence


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_price_a_sku_or_a_po_not_on_the_document_disagrees(layout: str) -> None:
    text = render(DOC, layout)
    assert "reads" in disagreement(_answer(("SKU-L1", 80, 1200), ("SKU-L10", 3, 1_25_000_00)),
                                   text).reason
    assert "no line with SKU-L2" in disagreement(
        _answer(("SKU-L2", 80, 1250), ("SKU-L10", 3, 1_25_000_00)), text).reason
    assert "PO 'PO-78'" in disagreement(
        _answer(("SKU-L1", 80, 1250), ("SKU-L10", 3, 1_25_000_00), po="PO-78"), text).reason
    assert "invoice 'INV-8'" in disagreement(
        _answer(("SKU-L1", 80, 1250), ("SKU-L10", 3, 1_25_000_00), invoice="INV-8"),
        text).reason


def test_a_line_dropped_is_caught_by_the_stated_total() -> None:
    text = render(DOC, "table")  # states "Total: ..."; csv states none
    found = disagreement(_answer(("SKU-L1", 80, 1250)), text)
    assert found is not None and "add up to ₹1,000" in found.reason and "₹3,76,000" in found.reason
    assert disagreement(_answer(("SKU-L1", 80, 1250)), render(DOC, "csv")) is None


def test_a_number_in_a_description_is_not_a_quantity() -> None:
    doc = "INV-7 PO-77\n| 1 | SKU-L1 | Widget 40mm 40 pack | 80 | 12.50 |\nTotal: 1,000.00\n"
    assert disagreement(_answer(("SKU-L1", 80, 1250)), doc) is None
    lie = disagreement(_answer(("SKU-L1", 40, 1250)), doc)  # "40 pack" is on the line ...
    assert lie is not None and "add up to ₹500" in lie.reason  # ... the stated total is not


def test_one_document_line_backs_one_answer_line() -> None:
    doubled = _answer(("SKU-L1", 80, 1250), ("SKU-L1", 80, 1250), ("SKU-L10", 3, 1_25_000_00))
    assert disagreement(doubled, render(DOC, "csv")) is not None


def test_numbers_read_whatever_their_formatting() -> None:
    assert 1_25_000_00 in _paise_on("Rate 1,25,000.00")  # Indian grouping
    assert 125050 in _paise_on("₹1,250.50") and 125050 in _paise_on("Rs. 1250.5")
    assert 125000 in _paise_on("at Rs.1250/- each") and 125000 in _paise_on("INR1,250")
    assert 1_250_000_00 in _paise_on("1,250,000.00")  # western grouping


def test_a_quantity_times_a_price_reads_both() -> None:
    assert {8000, 1250} <= _paise_on("80x12.50") and {8000, 1250} <= _paise_on("80 × ₹12.50")
    assert disagreement(_answer(("SKU-L1", 80, 1250)), "INV-7 PO-77\nSKU-L1 80x12.50\n") is None


def test_no_number_is_taken_from_inside_a_word_or_a_date() -> None:
    assert _paise_on("SKU-1026 INV-9 2026-10-13 v1.2") == set()
    assert 802500 not in _paise_on("80,25")  # no valid grouping: read as pieces
    assert {8000, 2500} <= _paise_on("80,25")


def test_a_quantity_and_a_price_must_be_two_numbers_of_the_line() -> None:
    doc = "INV-7 PO-77\n| 1 | SKU-L1 | thing | 12.50 |\n"
    assert disagreement(_answer(("SKU-L1", 1, 1250)), doc) is None  # 1 and 12.50
    assert disagreement(_answer(("SKU-L1", 12, 1250)), doc) is not None  # 12 is not on the line
    inside = "INV-7 PO-77\n| 1 | 1026 | thing | 5 | 5.00 |\n"
    assert disagreement(_answer(("1026", 1026, 500)), inside) is not None  # the SKU is no qty


def test_a_total_on_a_line_item_is_not_the_document_total() -> None:
    doc = "INV-7 PO-77\n1) 2 units of SKU-T (Total Care 9.99 ml) at Rs 10.00\n"
    assert disagreement(_answer(("SKU-T", 2, 1000)), doc) is None


def test_a_seeded_night_agrees_everywhere() -> None:
    plan = plan_night("2026-10-13", "ut", 400, 20, 7)
    checked = 0
    for chunk in night_chunks(plan):
        for row in chunk.invoices:
            text = row[4]
            if text.startswith("[scan"):
                continue
            assert disagreement(parse_document(text), text) is None, text
            checked += 1
    assert checked > 350


def test_a_quoted_line_carries_no_control_characters() -> None:
    doc = "INV-7 PO-77\n| 1 | SKU-L1 | \x1b[2Jwiped | 80 | 12.50 |\n"
    found = disagreement(_answer(("SKU-L1", 40, 1250)), doc)
    assert found is not None and "\x1b" not in found.reason and "\\x1b[2J" in found.reason


# Decoys (issue 39, item 4): a document that reads two ways parks, whatever the model says.
DECOY_DOC = (
    "TAX INVOICE\nInvoice No: INV-7\nPO Ref: PO-77\n"
    "| # | SKU | Description | Qty | Rate |\n"
    "| 1 | SKU-L1 | goods | 80 | 120.00 |\n"
    "Delivery memo: SKU-L1 qty 40 rate 120.00\n"
    "Total: 9,600.00\n"
    "Amount payable: 4,800.00\n"
)


@pytest.mark.parametrize("qty", [40, 80])
def test_a_decoy_line_parks_whichever_reading_the_model_gives(qty: int) -> None:
    found = disagreement(_answer(("SKU-L1", qty, 120_00)), DECOY_DOC)
    assert found is not None
    assert "more than one line" in found.reason
    assert "| 1 | SKU-L1 | goods | 80 | 120.00 |" in found.reason
    assert "Delivery memo: SKU-L1 qty 40 rate 120.00" in found.reason


def test_two_totals_that_disagree_park_with_both() -> None:
    doc = DECOY_DOC.replace("Delivery memo: SKU-L1 qty 40 rate 120.00\n", "")
    found = disagreement(_answer(("SKU-L1", 80, 120_00)), doc)  # even the billed reading
    assert found is not None and "totals that disagree" in found.reason
    assert "₹9,600" in found.reason and "₹4,800" in found.reason
    assert "Amount payable: 4,800.00" in found.evidence


def test_honest_repeats_and_subtotal_plus_tax_are_not_decoys() -> None:
    doc = (
        "TAX INVOICE\nInvoice No: INV-7\nPO Ref: PO-77\n"
        "| 1 | SKU-L1 | goods | 80 | 120.00 |\n"
        "| 2 | SKU-L10 | gadget | 3 | 1,25,000.00 |\n"
        "Delivered: SKU-L1 80 at 120.00\n"
        "Note: SKU-L10 is back-ordered\n"
        "Sub-total: 3,84,600.00\n"
        "CGST 9%: 34,614.00\n"
        "SGST 9%: 34,614.00\n"
        "Total: 4,53,828.00\n"
        "Amount payable: Rs 4,53,828.00\n"
    )
    assert disagreement(_answer(("SKU-L1", 80, 120_00), ("SKU-L10", 3, 1_25_000_00)), doc) is None


def test_one_sku_billed_on_two_lines_read_as_two_lines_agrees() -> None:
    doc = ("Invoice No: INV-7 PO-77\n| 1 | SKU-L1 | goods | 30 | 120.00 |\n"
           "| 2 | SKU-L1 | goods | 50 | 120.00 |\nTotal: 9,600.00\n")
    assert disagreement(_answer(("SKU-L1", 30, 120_00), ("SKU-L1", 50, 120_00)), doc) is None
    # the model that drops one of them: the other line reads SKU-L1 another way
    dropped = disagreement(_answer(("SKU-L1", 30, 120_00)), doc.replace("Total: 9,600.00\n", ""))
    assert dropped is not None and "more than one line" in dropped.reason
