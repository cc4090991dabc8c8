"""Files that are no invoice to reconcile are named for what they are (issue 37, items 5 and 7):
hostile XML as "DOCTYPE not allowed", a delivery note or an order as such, a test document as a
test; the importer refuses each alone, and a stored one is parked by step 2, never read."""

from __future__ import annotations

import pytest

from recon.documents.extraction.document_reader import DocumentReader
from recon.documents.formats import facturx
from recon.documents.formats.detect import read_file
from recon.documents.layouts import render
from recon.tools import cii_writer, ubl_writer
from tests.unit.test_formats import BILLION_LAUGHS, DOC, SELLER, XXE, fixture

UBL = "urn:oasis:names:specification:ubl:schema:xsd:"


def _ubl_other(name: str, enveloped: bool = False) -> bytes:
    doc = f'<{name} xmlns="{UBL}{name}-2"><ID>X-1</ID></{name}>'
    if enveloped:
        doc = ('<StandardBusinessDocument xmlns="http://www.unece.org/cefact/namespaces/'
               f'StandardBusinessDocumentHeader">{doc}</StandardBusinessDocument>')
    return f'<?xml version="1.0" encoding="UTF-8"?>{doc}'.encode()


@pytest.mark.parametrize("hostile", [BILLION_LAUGHS, XXE], ids=["billion-laughs", "xxe"])
def test_hostile_xml_is_named_as_such(hostile: bytes) -> None:
    file = read_file("inv.xml", hostile)
    assert file.refusal is not None and file.refusal.startswith("DOCTYPE not allowed in inv.xml: ")
    assert "nothing in it was expanded or read" in file.refusal
    assert "supplier" not in file.refusal


def test_a_factur_x_pdf_carrying_hostile_xml_is_named_as_such() -> None:
    pdf = facturx.write(XXE.decode(), "an invoice")
    assert (read_file("fx.pdf", pdf).refusal or "").startswith("DOCTYPE not allowed in fx.pdf")


@pytest.mark.parametrize(("data", "said"), [
    (_ubl_other("DespatchAdvice"), "d.xml is a UBL DespatchAdvice: a despatch advice (a delivery "
                                   "note), not an invoice"),
    (_ubl_other("Order"), "d.xml is a UBL Order: an order, not an invoice"),
    (_ubl_other("Order", enveloped=True), "d.xml is a UBL Order: an order, not an invoice"),
    (_ubl_other("ReceiptAdvice"), "d.xml is a UBL ReceiptAdvice: a goods receipt"),
    (cii_writer.write(DOC, SELLER).replace("<ram:TypeCode>380<", "<ram:TypeCode>351<").encode(),
     "d.xml is a CII document of type code 351: a despatch advice (a delivery note), not an "
     "invoice"),
    (cii_writer.write(DOC, SELLER).replace("<ram:TypeCode>380<", "<ram:TypeCode>325<").encode(),
     "d.xml is a CII document of type code 325: a pro-forma invoice, not an invoice"),
    (b'<rsm:CrossIndustryDespatchAdvice xmlns:rsm="urn:un:unece:uncefact:data:standard:'
     b'CrossIndustryDespatchAdvice:100"/>', "d.xml is a UN/CEFACT CrossIndustryDespatchAdvice"),
], ids=["ubl-despatch", "ubl-order", "ubl-order-enveloped", "ubl-receipt", "cii-351", "cii-325",
        "cii-despatch-root"])
def test_documents_of_another_kind_are_named(data: bytes, said: str) -> None:
    file = read_file("d.xml", data)
    assert file.refusal is not None and said in file.refusal, file.refusal
    assert file.reading is None


def test_invoice_codes_beyond_380_are_still_invoices() -> None:
    for code in ("384", "389", "751", "326", "383", "381"):
        xml = cii_writer.write(DOC, SELLER).replace("<ram:TypeCode>380<", f"<ram:TypeCode>{code}<")
        file = read_file("c.xml", xml.encode())
        assert file.refusal is None and file.reading is not None, code


def test_a_test_document_is_refused_and_a_stored_one_parked() -> None:
    xml = cii_writer.write(DOC, SELLER, test=True)
    for name, data in (("t.xml", xml.encode()),
                       ("t.pdf", facturx.write(xml, render(DOC, "table")))):
        file = read_file(name, data)
        assert file.refusal == (f"{name} is marked as a test document (ExchangedDocumentContext/"
                                "TestIndicator true): a test invoice is not a bill"), file.refusal
        result = DocumentReader().read("T", "S001", file.document)
        assert result is not None and not result.check_against_source(file.document).readable
        assert "test document" in result.unreadable.reason
    # An explicit `false` (ZUGFeRD samples carry one) is a real invoice.
    real = xml.replace("<udt:Indicator>true<", "<udt:Indicator>false<")
    assert read_file("r.xml", real.encode()).refusal is None


def test_a_zugferd_1_test_indicator_is_read_under_its_own_names() -> None:
    data = fixture("zugferd1.xml")
    assert read_file("z.xml", data).refusal is None
    marked = data.replace(b"<rsm:SpecifiedExchangedDocumentContext>",
                          b"<rsm:SpecifiedExchangedDocumentContext><ram:TestIndicator>"
                          b"<udt:Indicator>true</udt:Indicator></ram:TestIndicator>", 1)
    assert marked != data
    assert "marked as a test document" in (read_file("z.xml", marked).refusal or "")


def test_a_ubl_invoice_is_not_refused() -> None:
    assert read_file("u.xml", ubl_writer.write(DOC, SELLER).encode()).refusal is None
