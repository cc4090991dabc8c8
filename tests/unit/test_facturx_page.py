"""A Factur-X PDF's embedded XML is compared with its visible page (issue 37, item 8): number,
each line's quantity where the page states it, and the lines' sum; a disagreement parks the
invoice with both readings, an agreeing PDF reads as before, a page in no layout is not compared."""

from __future__ import annotations

from dataclasses import replace

import pytest

from recon.documents.extraction.document_reader import DocumentReader
from recon.documents.formats import facturx
from recon.documents.formats.detect import UNREADABLE_MARK, read_file, read_stored
from recon.documents.layouts import DocumentLine, render
from recon.domain.errors import UnreadableInvoice
from recon.tools import cii_writer
from tests.unit.test_formats import DOC, SELLER

PAGE_SAYS_2 = replace(DOC, lines=[replace(DOC.lines[0], qty=2), DOC.lines[1]])


def test_a_page_saying_2_where_the_xml_says_3_parks_with_both_readings() -> None:
    pdf = facturx.write(cii_writer.write(DOC, SELLER), render(PAGE_SAYS_2, "table"))
    file = read_file("fx.pdf", pdf)
    assert file.format == "facturx" and file.reading is not None, "still attributed by its XML"
    assert file.problem is not None and "its embedded XML and its page disagree" in file.problem
    assert "line 1 (SKU-1001) quantity 3 in the XML, 2 on the page" in file.problem
    assert "lines sum to 1476.09 in the XML, 1025.76 on the page" in file.problem
    assert file.document.startswith(UNREADABLE_MARK)
    with pytest.raises(UnreadableInvoice) as raised:
        read_stored(file.document)
    assert "embedded XML: number INV-7/26; line 1 SKU-1001 x 3 = 1350.99" in raised.value.evidence
    assert "page: number INV-7/26; line 1 SKU-1001 x 2 = 900.66" in raised.value.evidence
    result = DocumentReader().read("X", "S001", file.document)
    assert result is not None and result.unreadable is not None
    assert "disagree" in result.unreadable.reason and "page:" in result.unreadable.evidence


def test_another_number_on_the_page_is_a_disagreement() -> None:
    page = render(replace(DOC, invoice_no="INV-8/26"), "table")
    file = read_file("fx.pdf", facturx.write(cii_writer.write(DOC, SELLER), page))
    assert "number INV-7/26 in the XML, INV-8/26 on the page" in (file.problem or "")


@pytest.mark.parametrize("layout", ["table", "csv", "letter"])
def test_an_agreeing_page_reads_as_before(layout: str) -> None:
    xml = cii_writer.write(DOC, SELLER)
    file = read_file("fx.pdf", facturx.write(xml, render(DOC, layout)))
    assert file.problem is None and file.document == xml and file.reading is not None


def test_a_page_in_no_layout_is_not_compared() -> None:
    file = read_file("fx.pdf", facturx.write(cii_writer.write(DOC, SELLER), "a picture of it"))
    assert file.problem is None and file.reading is not None


def test_a_line_the_page_does_not_state_is_not_compared_by_quantity() -> None:
    extra = replace(DOC, lines=[*DOC.lines, DocumentLine("SKU-1003", "Dal 1kg", 4, 9_900)])
    file = read_file("fx.pdf", facturx.write(cii_writer.write(extra, SELLER), render(DOC, "table")))
    assert file.problem is not None and "quantity" not in file.problem
    assert "lines sum to" in file.problem, "the page's sum says a line is missing"
