"""The CII writer: EN 16931 profile CrossIndustryInvoice documents for the seed and tests."""

from __future__ import annotations

from collections.abc import Iterable
from xml.sax.saxutils import escape, quoteattr

from recon.documents.formats.cii import QDT, RAM, RSM, UDT
from recon.documents.formats.reading import CREDIT_NOTE, DEBIT_NOTE, INVOICE, PartyIds
from recon.documents.layouts import Document


def _money(paise_amount: int) -> str:
    sign = "-" if paise_amount < 0 else ""
    whole, frac = divmod(abs(paise_amount), 100)
    return f"{sign}{whole}.{frac:02d}"


def write(doc: Document, seller: PartyIds, kind: str = INVOICE, cites: Iterable[str] = (),
          tax_rate: int = 18, currency: str = "INR", test: bool = False,
          buyer_gstin: str | None = None, hsn: str | None = None) -> str:
    """An EN 16931 profile CII invoice (TypeCode 380, 381 for a credit note, 383 a debit note):
    one tax rate, no allowances; each line's SKU as the seller's id and the order line id.
    `test` marks it as a test document (`ExchangedDocumentContext/TestIndicator`); `buyer_gstin`
    states the buyer's GSTIN, `hsn` each line's HSN code."""
    code = {CREDIT_NOTE: "381", DEBIT_NOTE: "383"}.get(kind, "380")
    net = sum(ln.amount_paise for ln in doc.lines)
    tax = (net * tax_rate + 50) // 100
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<rsm:CrossIndustryInvoice xmlns:rsm="{RSM}" xmlns:ram="{RAM}" xmlns:udt="{UDT}"'
        f' xmlns:qdt="{QDT}">',
        "<rsm:ExchangedDocumentContext>"
        + ("<ram:TestIndicator><udt:Indicator>true</udt:Indicator></ram:TestIndicator>"
           if test else "")
        + "<ram:GuidelineSpecifiedDocumentContextParameter>"
        "<ram:ID>urn:cen.eu:en16931:2017</ram:ID></ram:GuidelineSpecifiedDocumentContextParameter>"
        "</rsm:ExchangedDocumentContext>",
        f"<rsm:ExchangedDocument><ram:ID>{escape(doc.invoice_no)}</ram:ID>"
        f"<ram:TypeCode>{code}</ram:TypeCode><ram:IssueDateTime>"
        f'<udt:DateTimeString format="102">{doc.business_date.replace("-", "")}'
        "</udt:DateTimeString></ram:IssueDateTime></rsm:ExchangedDocument>",
        "<rsm:SupplyChainTradeTransaction>",
    ]
    for n, ln in enumerate(doc.lines, 1):
        out.append(
            f"<ram:IncludedSupplyChainTradeLineItem><ram:AssociatedDocumentLineDocument>"
            f"<ram:LineID>{n}</ram:LineID></ram:AssociatedDocumentLineDocument>"
            f"<ram:SpecifiedTradeProduct><ram:SellerAssignedID>{escape(ln.sku)}"
            f"</ram:SellerAssignedID><ram:Name>{escape(ln.description)}</ram:Name>"
            + (f"<ram:DesignatedProductClassification><ram:ClassCode listID=\"HSN\">{escape(hsn)}"
               "</ram:ClassCode></ram:DesignatedProductClassification>" if hsn else "")
            + "</ram:SpecifiedTradeProduct><ram:SpecifiedLineTradeAgreement>"
            f"<ram:BuyerOrderReferencedDocument><ram:LineID>{escape(ln.sku)}</ram:LineID>"
            "</ram:BuyerOrderReferencedDocument><ram:NetPriceProductTradePrice>"
            f"<ram:ChargeAmount>{ln.price_text()}</ram:ChargeAmount>"
            "</ram:NetPriceProductTradePrice></ram:SpecifiedLineTradeAgreement>"
            f"<ram:SpecifiedLineTradeDelivery><ram:BilledQuantity unitCode="
            f"{quoteattr(ln.unit or 'C62')}>{ln.qty}"
            "</ram:BilledQuantity></ram:SpecifiedLineTradeDelivery>"
            "<ram:SpecifiedLineTradeSettlement><ram:ApplicableTradeTax><ram:TypeCode>VAT"
            "</ram:TypeCode><ram:CategoryCode>S</ram:CategoryCode><ram:RateApplicablePercent>"
            f"{tax_rate}</ram:RateApplicablePercent></ram:ApplicableTradeTax>"
            "<ram:SpecifiedTradeSettlementLineMonetarySummation><ram:LineTotalAmount>"
            f"{_money(ln.amount_paise)}</ram:LineTotalAmount>"
            "</ram:SpecifiedTradeSettlementLineMonetarySummation>"
            "</ram:SpecifiedLineTradeSettlement></ram:IncludedSupplyChainTradeLineItem>")
    party = [f"<ram:SellerTradeParty><ram:Name>{escape(seller.name or '')}</ram:Name>"]
    if seller.endpoint:
        scheme, _, ident = seller.endpoint.rpartition(":")
        party.append(f"<ram:URIUniversalCommunication><ram:URIID schemeID="
                     f"{quoteattr(scheme or '0088')}>{escape(ident)}</ram:URIID>"
                     "</ram:URIUniversalCommunication>")
    for tax_id in (seller.gstin, seller.vat_id):
        if tax_id:
            party.append(f'<ram:SpecifiedTaxRegistration><ram:ID schemeID="VA">{escape(tax_id)}'
                         "</ram:ID></ram:SpecifiedTaxRegistration>")
    party.append("</ram:SellerTradeParty>")
    out.append("<ram:ApplicableHeaderTradeAgreement>" + "".join(party)
               + "<ram:BuyerTradeParty><ram:Name>Distributor</ram:Name>"
               + (f'<ram:SpecifiedTaxRegistration><ram:ID schemeID="VA">{escape(buyer_gstin)}'
                  "</ram:ID></ram:SpecifiedTaxRegistration>" if buyer_gstin else "")
               + "</ram:BuyerTradeParty>"
               f"<ram:BuyerOrderReferencedDocument><ram:IssuerAssignedID>{escape(doc.po_number)}"
               "</ram:IssuerAssignedID></ram:BuyerOrderReferencedDocument>"
               "</ram:ApplicableHeaderTradeAgreement><ram:ApplicableHeaderTradeDelivery/>")
    refs = "".join(f"<ram:InvoiceReferencedDocument><ram:IssuerAssignedID>{escape(c)}"
                   "</ram:IssuerAssignedID></ram:InvoiceReferencedDocument>" for c in cites)
    out.append(
        f"<ram:ApplicableHeaderTradeSettlement><ram:InvoiceCurrencyCode>{escape(currency)}"
        f"</ram:InvoiceCurrencyCode><ram:ApplicableTradeTax><ram:CalculatedAmount>{_money(tax)}"
        f"</ram:CalculatedAmount><ram:TypeCode>VAT</ram:TypeCode><ram:BasisAmount>{_money(net)}"
        "</ram:BasisAmount><ram:CategoryCode>S</ram:CategoryCode><ram:RateApplicablePercent>"
        f"{tax_rate}</ram:RateApplicablePercent></ram:ApplicableTradeTax>"
        "<ram:SpecifiedTradeSettlementHeaderMonetarySummation>"
        f"<ram:LineTotalAmount>{_money(net)}</ram:LineTotalAmount>"
        f"<ram:TaxBasisTotalAmount>{_money(net)}</ram:TaxBasisTotalAmount>"
        f"<ram:TaxTotalAmount currencyID={quoteattr(currency)}>{_money(tax)}</ram:TaxTotalAmount>"
        f"<ram:GrandTotalAmount>{_money(net + tax)}</ram:GrandTotalAmount>"
        f"<ram:DuePayableAmount>{_money(net + tax)}</ram:DuePayableAmount>"
        f"</ram:SpecifiedTradeSettlementHeaderMonetarySummation>{refs}"
        "</ram:ApplicableHeaderTradeSettlement></rsm:SupplyChainTradeTransaction>"
        "</rsm:CrossIndustryInvoice>")
    return "\n".join(out) + "\n"
