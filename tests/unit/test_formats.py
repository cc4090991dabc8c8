"""Every format read exactly, with no server: the product's writers round-trip through the
readers, and the hand-written documents in tests/fixtures/documents exercise the corners the
writers never produce (several tax rates, allowances and charges, negative lines, prefixes,
envelopes, signed e-invoices, PDFs with and without text, hostile XML)."""

from __future__ import annotations

import base64
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from recon.documents.extraction.document_reader import DocumentReader
from recon.documents.formats import cii, facturx, gst_einvoice, ubl
from recon.documents.formats.checks import as_invoice, check, payable_paise, unit_price_paise
from recon.documents.formats.detect import read_file, read_stored
from recon.documents.formats.pdf_text import write_scan_pdf, write_text_pdf
from recon.documents.formats.reading import CREDIT_NOTE, DEBIT_NOTE, INVOICE, PartyIds
from recon.documents.layouts import Document, DocumentLine, render
from recon.domain.errors import UnreadableInvoice
from recon.tools import cii_writer, gst_writer, ubl_writer
from recon.tools.seed_formats import gstin_check, seller_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
DOC = Document("INV-7/26", "S001", "Sharma Foods & Sons <Pvt>", "2026-10-13", "PO-LDH-1",
               [DocumentLine("SKU-1001", "Basmati rice 5kg", 3, 45_033),
                DocumentLine("SKU-1002", "Atta 10kg \"chakki\"", 10, 1_251)])
SELLER = PartyIds(gstin="03AABCS1234K1Z5", endpoint="0088:8900000000001", name=DOC.supplier_name)
WRITTEN = {
    "ubl": lambda kind=INVOICE, cites=(): ubl_writer.write(DOC, SELLER, kind, cites).encode(),
    "cii": lambda kind=INVOICE, cites=(): cii_writer.write(DOC, SELLER, kind, cites).encode(),
    "gst-einvoice": lambda kind=INVOICE, cites=(): gst_writer.write(DOC, SELLER, kind,
                                                                    cites).encode(),
}


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@pytest.mark.parametrize("fmt", sorted(WRITTEN))
def test_the_writers_round_trip_exactly(fmt: str) -> None:
    file = read_file("x", WRITTEN[fmt]())
    assert file.format == fmt and file.problem is None and file.reading is not None
    found = as_invoice(file.reading, "S001")
    assert (found.invoice_no, found.po_number) == ("INV-7/26", "PO-LDH-1")
    assert [(ln.line_no, ln.sku, ln.quantity, ln.unit_price_paise) for ln in found.lines] == [
        (1, "SKU-1001", 3, 45_033), (2, "SKU-1002", 10, 1_251)]
    assert file.reading.sender.gstin == SELLER.gstin
    net = 3 * 45_033 + 10 * 1_251
    assert payable_paise(file.reading) == net + (net * 18 + 50) // 100
    assert file.reading.issued_on == "2026-10-13"


@pytest.mark.parametrize("fmt", sorted(WRITTEN))
def test_credit_and_debit_notes_are_told_apart(fmt: str) -> None:
    credit = read_file("x", WRITTEN[fmt](CREDIT_NOTE, ["DN-20261013-LDH-S001"])).reading
    assert credit is not None and credit.kind == CREDIT_NOTE
    assert credit.cites == ["DN-20261013-LDH-S001"]
    with pytest.raises(UnreadableInvoice, match="credit note is not an invoice"):
        as_invoice(credit, "S001")
    debit = read_file("x", WRITTEN[fmt](DEBIT_NOTE)).reading
    assert debit is not None and debit.kind == DEBIT_NOTE
    assert as_invoice(debit, "S001").lines  # a supplier's debit note is a bill


def test_the_signed_portal_answer_is_opened() -> None:
    signed = gst_writer.write(DOC, SELLER, signed=True)
    answer = json.loads(signed)
    assert len(answer["Irn"]) == 64 and answer["SignedInvoice"].count(".") == 2
    reading = gst_einvoice.read(signed)
    assert reading.number == "INV-7/26" and len(reading.lines) == 2
    head, body, sig = answer["SignedInvoice"].split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    inner = json.loads(payload["data"])
    inner["Irn"] = "0" * 64
    payload["data"] = json.dumps(inner)
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    answer["SignedInvoice"] = ".".join([head, forged, sig])
    with pytest.raises(UnreadableInvoice, match="is not the signed one"):
        gst_einvoice.read(json.dumps(answer))
    envelope = json.dumps({"Status": 1, "Data": signed})
    assert gst_einvoice.read(envelope).number == "INV-7/26"


def test_ubl_with_two_rates_allowances_charges_and_odd_prefixes() -> None:
    reading = ubl.read(fixture("ubl-multi-rate.xml"))
    check(reading)
    assert (reading.number, reading.currency, reading.po_number) == (
        "EXP-2026-0042", "EUR", "PO-EU-77")
    assert reading.sender.endpoint == "0088:7300010000001"
    assert reading.sender.vat_id == "DE 123 456 789"
    # Buyer's item id first; a price per base quantity of 10; the line allowance is in the net.
    assert [(ln.sku, int(ln.quantity), ln.net_amount) for ln in reading.lines] == [
        ("SKU-1013", 40, Decimal("543.00")), ("SKU-1015", 12, Decimal("164.20"))]
    assert [unit_price_paise(ln) for ln in reading.lines] == [1358, 1368]
    assert payable_paise(reading) == 74_000
    broken = fixture("ubl-multi-rate.xml").replace(b">106.02<", b">106.12<", 1)
    with pytest.raises(UnreadableInvoice, match="tax at 19% .* is 106.12"):
        check(ubl.read(broken))
    lines_off = fixture("ubl-multi-rate.xml").replace(b">543.00<", b">544.00<", 1)
    with pytest.raises(UnreadableInvoice, match="line 1 LineExtensionAmount is 544.00"):
        check(ubl.read(lines_off))


def test_ubl_credit_note_in_an_envelope_with_a_negative_line() -> None:
    file = read_file("cn.xml", fixture("ubl-creditnote.xml"))
    assert file.format == "ubl" and file.reading is not None
    reading = file.reading
    check(reading)  # a negative line is allowed on a credit note
    assert reading.kind == CREDIT_NOTE and reading.number == "CN-2026-007"
    assert reading.cites == ["DN-20261013-LDH-S901", "EXP-2026-0042"]
    assert [int(ln.quantity) for ln in reading.lines] == [10, -2]
    assert payable_paise(reading) == 11_900


def test_a_negative_line_on_an_invoice_is_refused() -> None:
    text = ubl_writer.write(DOC, SELLER).replace(
        '<cbc:InvoicedQuantity unitCode="C62">3<', '<cbc:InvoicedQuantity unitCode="C62">-3<')
    with pytest.raises(UnreadableInvoice, match="quantity -3 is negative: a return belongs"):
        check(ubl.read(text))
    fractional = ubl_writer.write(DOC, SELLER).replace(
        '<cbc:InvoicedQuantity unitCode="C62">3<', '<cbc:InvoicedQuantity unitCode="C62">2.5<')
    with pytest.raises(UnreadableInvoice, match="2.5 is not a whole number"):
        check(ubl.read(fractional))


def test_cii_with_allowances_two_rates_and_rounding() -> None:
    reading = cii.read(fixture("cii-allowances.xml"))
    check(reading)
    assert (reading.number, reading.issued_on, reading.po_number) == (
        "KA/2026/1187", "2026-10-12", "PO-KA-5521")
    assert reading.sender.gstin == "29AABCK1234M1ZQ"
    assert [(ln.sku, unit_price_paise(ln)) for ln in reading.lines] == [
        ("SKU-1003", 14_000), ("SKU-1011", 21_275)]
    assert payable_paise(reading) == 1_348_000
    wrong = fixture("cii-allowances.xml").replace(b"<ram:TaxBasisTotalAmount>12206.00",
                                                  b"<ram:TaxBasisTotalAmount>12106.00")
    with pytest.raises(UnreadableInvoice, match="TaxBasisTotalAmount is 12106.00"):
        check(cii.read(wrong))


def test_cii_credit_note_with_other_prefixes() -> None:
    reading = cii.read(fixture("cii-creditnote.xml"))
    check(reading)
    assert reading.kind == CREDIT_NOTE and reading.cites == ["KA/2026/1187"]
    assert payable_paise(reading) == 73_500


def test_gst_discount_igst_cess_and_round_off() -> None:
    reading = gst_einvoice.read(fixture("gst-discount-igst.json"))
    check(reading)
    assert (reading.number, reading.issued_on, reading.po_number) == (
        "MS/26-27/0913", "2026-10-12", "PO-MS-3391")
    # The net (assessable) amount per unit is what the run compares: 5500.00 / 120, half up.
    assert [(ln.sku, int(ln.quantity), unit_price_paise(ln)) for ln in reading.lines] == [
        ("SKU-1013", 120, 4583), ("SKU-1016", 30, 61_250)]
    assert payable_paise(reading) == 2_650_400
    over = fixture("gst-discount-igst.json").replace(b'"TotInvVal": 26504.00',
                                                     b'"TotInvVal": 26506.00')
    with pytest.raises(UnreadableInvoice, match="TotInvVal is 26506.00"):
        check(gst_einvoice.read(over))
    within = fixture("gst-discount-igst.json").replace(b'"TotInvVal": 26504.00',
                                                       b'"TotInvVal": 26504.90')
    check(gst_einvoice.read(within))  # the IRP's rupee of tolerance


def test_gst_credit_note_cites_the_invoice_and_our_debit_note() -> None:
    reading = gst_einvoice.read(fixture("gst-crn.json"))
    check(reading)
    assert reading.kind == CREDIT_NOTE
    assert reading.cites == ["MS/26-27/0913", "DN-20261013-LDH-S901"]
    assert payable_paise(reading) == 31_500


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">&lol3;</Invoice>"""
XXE = b"""<?xml version="1.0"?>
<!DOCTYPE x [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
 xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">
<cbc:ID>&secret;</cbc:ID></Invoice>"""


@pytest.mark.parametrize("hostile", [BILLION_LAUGHS, XXE], ids=["billion-laughs", "xxe"])
def test_hostile_xml_is_refused_and_never_handed_to_a_model(hostile: bytes) -> None:
    file = read_file("evil.xml", hostile)
    assert file.reading is None and "declares a DTD or entities" in (file.problem or "")
    assert "root:" not in file.document  # nothing was expanded or read from disk
    result = DocumentReader().read("X", "S001", file.document)
    assert result is not None and not result.check_against_source(file.document).readable
    assert "DTD" in result.unreadable.reason


def test_pdfs_with_and_without_a_text_layer() -> None:
    text = read_file("invoice.pdf", write_text_pdf(render(DOC, "table")))
    assert text.format == "pdf-text" and text.reading is not None
    assert text.document == render(DOC, "table")  # the text layer, line for line
    assert read_stored(text.document) is None  # text: for the offline layouts or the model
    scan = read_file("scan.pdf", write_scan_pdf())
    assert scan.format == "pdf-scan" and scan.reading is None
    assert "no text layer (a scan): OCR is not done" in (scan.problem or "")
    with pytest.raises(UnreadableInvoice, match="no text layer"):
        read_stored(scan.document)
    broken = read_file("broken.pdf", b"%PDF-1.7\n garbage")
    assert broken.format == "pdf-broken" and broken.reading is None


def test_a_factur_x_pdf_is_read_by_its_embedded_cii() -> None:
    pdf = facturx.write(cii_writer.write(DOC, SELLER), render(DOC, "table"))
    file = read_file("invoice.pdf", pdf)
    assert file.format == "facturx" and file.structured and file.reading is not None
    assert file.document.startswith("<?xml") and "CrossIndustryInvoice" in file.document
    assert as_invoice(read_stored(file.document), "S001").lines[0].unit_price_paise == 45_033


def test_step_2_reads_structured_documents_and_hands_text_back() -> None:
    reader = DocumentReader()
    done = reader.read("INV-7/26", "S001", ubl_writer.write(DOC, SELLER))
    assert done is not None
    assert done.check_against_source("").readable and done.line_count == 2
    other = reader.read("INV-7/26", "S001", '{"note": "some other JSON"}')
    assert other is None  # not a format we know: the night's extractor reads it as text
    wrong = reader.read("INV-8", "S001", ubl_writer.write(DOC, SELLER))
    assert wrong is not None and not wrong.check_against_source("x").readable


def test_seeded_gstins_carry_their_check_character() -> None:
    assert gstin_check("27AAPFU0939F1Z") == "V"  # a published, valid GSTIN: 27AAPFU0939F1ZV
    ids = seller_of("S007", "Punjab Dairy Pvt Ltd")
    assert ids.gstin is not None and len(ids.gstin) == 15 and ids.gstin.startswith("03")
    assert ids.gstin[-1] == gstin_check(ids.gstin[:14])


@pytest.mark.parametrize("number", ["1e999999999", "1E+30", "0.00000000000001", "NaN", "Infinity"])
def test_absurd_numbers_are_refused_not_computed(number: str) -> None:
    text = ubl_writer.write(DOC, SELLER).replace(
        '<cbc:InvoicedQuantity unitCode="C62">3<', f'<cbc:InvoicedQuantity unitCode="C62">{number}<')
    with pytest.raises(UnreadableInvoice, match="line 1 InvoicedQuantity is not a"):
        check(ubl.read(text))
    upload = json.loads(gst_writer.write(DOC, SELLER))
    upload["ItemList"][0]["UnitPrice"] = number
    with pytest.raises(UnreadableInvoice, match="UnitPrice is not a"):
        gst_einvoice.read(json.dumps(upload))


def test_zugferd_1_reads_like_cii_and_skips_note_lines() -> None:
    file = read_file("ZUGFeRD-invoice.xml", fixture("zugferd1.xml"))
    assert file.format == "cii" and file.reading is not None
    reading = file.reading
    check(reading)
    assert (reading.number, reading.issued_on, reading.po_number, reading.sender.vat_id) == (
        "RE-2026-5501", "2026-10-12", "PO-EU-78", "DE123456789")
    assert [(ln.line_no, ln.sku, unit_price_paise(ln)) for ln in reading.lines] == [
        (1, "SKU-1013", 1_000), (2, "SKU-1015", 250)]
    assert payable_paise(reading) == 17_250


def test_html_and_loose_markup_are_text_but_broken_xml_is_parked() -> None:
    reader = DocumentReader()
    for markup in (b"<!DOCTYPE html><html><body>Invoice 5</body></html>",
                   b"<html><p>Invoice <b>5</p></html>", b"<note>unclosed"):
        file = read_file("mail.html", markup)
        assert file.problem is None and read_stored(file.document) is None
        assert reader.read("5", "S001", file.document) is None  # for the layouts or the model
    broken = read_file("x.xml", b"<?xml version='1.0'?><Invoice><x></Invoice>")
    assert "not well-formed XML" in (broken.problem or "")
    result = reader.read("x", "S001", broken.document)
    assert result is not None and "not well-formed" in result.unreadable.reason


@pytest.mark.parametrize(("data", "fmt", "why"), [
    (b"\x89PNG\r\n\x1a\n....", "image-scan", "a picture (a scan or a photo): OCR is not done"),
    (b"\xff\xd8\xff\xe0 jpeg", "image-scan", "OCR is not done"),
    (b"PK\x03\x04 a docx or zip", "binary", "an archive or office file"),
])
def test_pictures_and_archives_are_unreadable_never_text(data: bytes, fmt: str, why: str) -> None:
    file = read_file("invoice.bin", data)
    assert file.format == fmt and why in (file.problem or "")
    with pytest.raises(UnreadableInvoice, match=re.escape(why)):
        read_stored(file.document)


def test_an_irn_that_is_not_64_hex_digits_is_refused() -> None:
    answer = json.loads(gst_writer.write(DOC, SELLER, signed=True))
    answer["Irn"] = "not-an-irn"
    with pytest.raises(UnreadableInvoice, match="is not 64 hex digits"):
        gst_einvoice.read(json.dumps(answer))
