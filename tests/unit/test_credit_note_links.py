"""A supplier's credit note is linked to the claim it answers by any of its standard's reference
fields (issue 37, item 6): GST `PrecDocDtls.InvNo` / `OthRefNo` / `ContrDtls.ExtRefr`, UBL
`BillingReference` / `DiscrepancyResponse` / `AdditionalDocumentReference`, CII
`InvoiceReferencedDocument` / `AdditionalReferencedDocument`; the claim number is found as a word
in the reference, in any case."""

from __future__ import annotations

import json

from recon.documents.formats.detect import read_file
from recon.documents.formats.reading import CREDIT_NOTE
from recon.mail.summary import settled_claims
from recon.tools import cii_writer, gst_writer, ubl_writer
from tests.unit.test_formats import DOC, SELLER

CLAIM = "DN-20261013-LDH-S001"


def gst_with_other_reference(claim_words: str) -> bytes:
    """A GST credit note citing the invoice in `InvNo` and our claim in `OthRefNo`, as the IRP
    schema has them (`RefDtls.PrecDocDtls[]`)."""
    data = json.loads(gst_writer.write(DOC, SELLER, CREDIT_NOTE, ["INV-7/26"]))
    data["RefDtls"]["PrecDocDtls"][0]["OthRefNo"] = claim_words
    return json.dumps(data).encode()


def cii_with_additional_reference(claim: str) -> bytes:
    xml = cii_writer.write(DOC, SELLER, CREDIT_NOTE)
    extra = (f"<ram:AdditionalReferencedDocument><ram:IssuerAssignedID>{claim}"
             "</ram:IssuerAssignedID><ram:TypeCode>916</ram:TypeCode>"
             "</ram:AdditionalReferencedDocument>")
    return xml.replace("</ram:ApplicableHeaderTradeAgreement>",
                       extra + "</ram:ApplicableHeaderTradeAgreement>").encode()


def ubl_with_discrepancy_response(claim: str) -> bytes:
    xml = ubl_writer.write(DOC, SELLER, CREDIT_NOTE)
    extra = (f"<cac:DiscrepancyResponse><cbc:ReferenceID>{claim}</cbc:ReferenceID>"
             "<cbc:Description>price agreed</cbc:Description></cac:DiscrepancyResponse>")
    return xml.replace("<cac:AccountingSupplierParty>",
                       extra + "<cac:AccountingSupplierParty>", 1).encode()


def test_each_standard_s_reference_fields_are_cited() -> None:
    gst = read_file("cn.json", gst_with_other_reference(f"against your debit note {CLAIM}"))
    assert gst.reading is not None and gst.reading.cites == [
        "INV-7/26", f"against your debit note {CLAIM}"]
    cii = read_file("cn.xml", cii_with_additional_reference(CLAIM))
    assert cii.reading is not None and cii.reading.kind == CREDIT_NOTE
    assert cii.reading.cites == [CLAIM]
    ubl = read_file("cn.xml", ubl_with_discrepancy_response(CLAIM))
    assert ubl.reading is not None and ubl.reading.cites == [CLAIM]


def test_a_claim_is_found_as_a_word_in_any_case() -> None:
    ours = {CLAIM, "DN-20261013-LDH-S001-ab12"}
    answers, other = settled_claims(
        ["INV-7/26", "against your debit note dn-20261013-ldh-s001.", "DN-20261013-LDH-S001-AB12",
         CLAIM, "DN-20261013-LDH-S0011"], ours)
    assert answers == [CLAIM, "DN-20261013-LDH-S001-ab12"]
    assert other == ["INV-7/26", "DN-20261013-LDH-S0011"], "a longer number is another claim"
