"""What the layouts write, the offline parser reads back line for line; what nobody can read
raises UnreadableInvoice with a reason and never a guess."""

from __future__ import annotations

import random

import pytest

from recon.documents.extraction.offline import parse_document
from recon.documents.extraction.schema import MAX_DOCUMENT_CHARS, UnreadableInvoice
from recon.documents.layouts import LAYOUTS, Document, DocumentLine, render, render_unreadable
from recon.domain.keys import invoice_ref
from recon.tools.seed import night_chunks, plan_night

DOC = Document(
    invoice_no="INV-20261013-LDH-00042",
    supplier_id="S007",
    supplier_name="Konkan Cashews Pvt Ltd",
    business_date="2026-10-13",
    po_number="PO-LDH-20261013-00042",
    lines=[
        DocumentLine("SKU-1016", "Cashews 500g", 12, 45_050),
        DocumentLine("SKU-1000", "Basmati rice 5kg", 1, 5),
        DocumentLine("SKU-1023", "Noodles carton", 10_000, 1_23_45_678_90),  # crores, with paise
        DocumentLine("SKU-9003", "Sample pack (not ordered)", 3, 9_900),
    ],
)


def _lines(doc: Document) -> list[tuple]:
    return [(n, x.sku, x.description, x.qty, x.unit_price_paise) for n, x in enumerate(doc.lines, 1)]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_round_trips(layout: str) -> None:
    parsed = parse_document(render(DOC, layout))
    assert parsed.invoice_no == DOC.invoice_no
    assert parsed.supplier_id == DOC.supplier_id
    assert parsed.po_number == DOC.po_number
    assert [(x.line_no, x.sku, x.description, x.quantity, x.unit_price_paise)
            for x in parsed.lines] == _lines(DOC)


def test_every_readable_document_of_a_seeded_night_round_trips() -> None:
    plan = plan_night("2026-10-13", "ldh", invoices=120, mismatches=20, seed=5)
    rows = {"invoices": [row for chunk in night_chunks(plan) for row in chunk.invoices]}
    result = plan.result
    layouts_seen = set()
    for invoice_no, supplier_id, _day, _wh, text in rows["invoices"]:
        if invoice_ref(supplier_id, invoice_no) in result.unreadable:
            with pytest.raises(UnreadableInvoice):
                parse_document(text)
            continue
        parsed = parse_document(text)
        layouts_seen.add(text.split("\n", 1)[0][:10])
        assert (parsed.invoice_no, parsed.supplier_id) == (invoice_no, supplier_id)
    assert len(layouts_seen) == len(LAYOUTS), "the night uses every layout"


def test_a_failed_scan_is_unreadable() -> None:
    with pytest.raises(UnreadableInvoice, match="layout not recognised") as caught:
        parse_document(render_unreadable(DOC, random.Random(1)))
    assert caught.value.evidence.startswith("[scan INV-20261013-LDH-00042.pdf")


@pytest.mark.parametrize(("text", "reason"), [
    ("", "layout not recognised"),
    ("hello, world\n", "layout not recognised"),
    ("TAX INVOICE\nInvoice No: INV-1\nSupplier: X (S001)\n", "table layout: no line items found"),
    ("invoice_no,INV-1\nsupplier,S001,X\nline,sku,description,qty,unit_price\n"
     "1,SKU-1,Rice,many,10.00\n", "csv layout"),
    ("invoice_no,INV-1\nsupplier,S001,X\nline,sku,description,qty,unit_price\n"
     "1,SKU-1,Rice,3,10.001\n", "csv layout"),
    ("TAX INVOICE\nInvoice No: INV-1\nSupplier: X (S001)\n| 1 | SKU-1 | Rice | 0 | 10.00 |\n",
     "table layout: quantity"),
    ("Dear Accounts Team,\n\nPlease find our bill INV-1 against your order PO-1 for goods supplied"
     " on 2026-10-13.\n\n  1) 2 units of SKU-1 (Rice) at Rs 10.00 per unit\n",
     "letter layout: supplier_id"),
], ids=["empty", "prose", "table-without-lines", "csv-bad-qty", "csv-third-decimal", "table-zero-qty",
        "letter-without-supplier"])
def test_documents_that_cannot_be_read_say_why(text: str, reason: str) -> None:
    with pytest.raises(UnreadableInvoice) as caught:
        parse_document(text)
    assert reason in caught.value.reason


def test_an_oversized_document_is_refused_before_parsing() -> None:
    text = render(DOC, "table") + "x" * MAX_DOCUMENT_CHARS
    with pytest.raises(UnreadableInvoice, match="too large"):
        parse_document(text)
