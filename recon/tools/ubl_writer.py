"""The UBL 2.1 writer: Peppol BIS 3 shaped invoices and credit notes for the seed and tests."""

from __future__ import annotations

from collections.abc import Iterable
from xml.sax.saxutils import escape, quoteattr

from recon.documents.formats.reading import CREDIT_NOTE, DEBIT_NOTE, INVOICE, PartyIds
from recon.documents.formats.ubl import CAC, CBC, CREDIT_NOTE_NS, INVOICE_NS
from recon.documents.layouts import Document


def _money(paise_amount: int) -> str:
    sign = "-" if paise_amount < 0 else ""
    whole, frac = divmod(abs(paise_amount), 100)
    return f"{sign}{whole}.{frac:02d}"


def write(doc: Document, seller: PartyIds, kind: str = INVOICE, cites: Iterable[str] = (),
          tax_rate: int = 18, currency: str = "INR", buyer_gstin: str | None = None,
          hsn: str | None = None) -> str:
    """A Peppol BIS 3 shaped Invoice (or CreditNote) for one seeded or test document: one tax
    rate, no allowances; each line's SKU as the seller's item id and the order line reference.
    `buyer_gstin` states the buyer (AccountingCustomerParty), `hsn` each line's HSN code."""
    credit = kind == CREDIT_NOTE
    root, line_tag, qty_tag = (("CreditNote", "CreditNoteLine", "CreditedQuantity") if credit
                               else ("Invoice", "InvoiceLine", "InvoicedQuantity"))
    ns = CREDIT_NOTE_NS if credit else INVOICE_NS
    code = "381" if credit else ("383" if kind == DEBIT_NOTE else "380")
    cur = quoteattr(currency)
    net = sum(ln.amount_paise for ln in doc.lines)
    tax = (net * tax_rate + 50) // 100
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<{root} xmlns="{ns}" xmlns:cac="{CAC}" xmlns:cbc="{CBC}">',
        "<cbc:CustomizationID>urn:cen.eu:en16931:2017#compliant#"
        "urn:fdc:peppol.eu:2017:poacc:billing:3.0</cbc:CustomizationID>",
        "<cbc:ProfileID>urn:fdc:peppol.eu:2017:poacc:billing:01:1.0</cbc:ProfileID>",
        f"<cbc:ID>{escape(doc.invoice_no)}</cbc:ID>",
        f"<cbc:IssueDate>{escape(doc.business_date)}</cbc:IssueDate>",
        f"<cbc:{root}TypeCode>{code}</cbc:{root}TypeCode>",
        f"<cbc:DocumentCurrencyCode>{escape(currency)}</cbc:DocumentCurrencyCode>",
        f"<cac:OrderReference><cbc:ID>{escape(doc.po_number)}</cbc:ID></cac:OrderReference>",
    ]
    out += [f"<cac:BillingReference><cac:InvoiceDocumentReference><cbc:ID>{escape(c)}</cbc:ID>"
            "</cac:InvoiceDocumentReference></cac:BillingReference>" for c in cites]
    party = ["<cac:AccountingSupplierParty><cac:Party>"]
    if seller.endpoint:
        scheme, _, ident = seller.endpoint.rpartition(":")
        party.append(f"<cbc:EndpointID schemeID={quoteattr(scheme or '0088')}>{escape(ident)}"
                     "</cbc:EndpointID>")
    party.append(f"<cac:PartyName><cbc:Name>{escape(seller.name or '')}</cbc:Name></cac:PartyName>")
    for tax_id, scheme in ((seller.gstin, "GST"), (seller.vat_id, "VAT")):
        if tax_id:
            party.append(f"<cac:PartyTaxScheme><cbc:CompanyID>{escape(tax_id)}</cbc:CompanyID>"
                         f"<cac:TaxScheme><cbc:ID>{scheme}</cbc:ID></cac:TaxScheme>"
                         "</cac:PartyTaxScheme>")
    party.append(f"<cac:PartyLegalEntity><cbc:RegistrationName>{escape(seller.name or '')}"
                 "</cbc:RegistrationName></cac:PartyLegalEntity></cac:Party>"
                 "</cac:AccountingSupplierParty>")
    if buyer_gstin:
        party.append("<cac:AccountingCustomerParty><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>"
                     f"{escape(buyer_gstin)}</cbc:CompanyID><cac:TaxScheme><cbc:ID>GST</cbc:ID>"
                     "</cac:TaxScheme></cac:PartyTaxScheme></cac:Party>"
                     "</cac:AccountingCustomerParty>")
    out += party
    out += [
        f"<cac:TaxTotal><cbc:TaxAmount currencyID={cur}>{_money(tax)}</cbc:TaxAmount>",
        f"<cac:TaxSubtotal><cbc:TaxableAmount currencyID={cur}>{_money(net)}</cbc:TaxableAmount>",
        f"<cbc:TaxAmount currencyID={cur}>{_money(tax)}</cbc:TaxAmount>",
        f"<cac:TaxCategory><cbc:ID>S</cbc:ID><cbc:Percent>{tax_rate}</cbc:Percent>"
        "<cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:TaxCategory>",
        "</cac:TaxSubtotal></cac:TaxTotal>",
        "<cac:LegalMonetaryTotal>",
        f"<cbc:LineExtensionAmount currencyID={cur}>{_money(net)}</cbc:LineExtensionAmount>",
        f"<cbc:TaxExclusiveAmount currencyID={cur}>{_money(net)}</cbc:TaxExclusiveAmount>",
        f"<cbc:TaxInclusiveAmount currencyID={cur}>{_money(net + tax)}</cbc:TaxInclusiveAmount>",
        f"<cbc:PayableAmount currencyID={cur}>{_money(net + tax)}</cbc:PayableAmount>",
        "</cac:LegalMonetaryTotal>",
    ]
    for n, ln in enumerate(doc.lines, 1):
        out += [
            f"<cac:{line_tag}><cbc:ID>{n}</cbc:ID>",
            f'<cbc:{qty_tag} unitCode={quoteattr(ln.unit or "C62")}>{ln.qty}</cbc:{qty_tag}>',
            f"<cbc:LineExtensionAmount currencyID={cur}>{_money(ln.amount_paise)}"
            "</cbc:LineExtensionAmount>",
            f"<cac:OrderLineReference><cbc:LineID>{escape(ln.sku)}</cbc:LineID>"
            "</cac:OrderLineReference>",
            f"<cac:Item><cbc:Name>{escape(ln.description)}</cbc:Name>",
            f"<cac:SellersItemIdentification><cbc:ID>{escape(ln.sku)}</cbc:ID>"
            "</cac:SellersItemIdentification>",
            (f'<cac:CommodityClassification><cbc:ItemClassificationCode listID="HSN">'
             f"{escape(hsn)}</cbc:ItemClassificationCode></cac:CommodityClassification>"
             if hsn else ""),
            f"<cac:ClassifiedTaxCategory><cbc:ID>S</cbc:ID><cbc:Percent>{tax_rate}</cbc:Percent>"
            "<cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:ClassifiedTaxCategory>",
            "</cac:Item>",
            f"<cac:Price><cbc:PriceAmount currencyID={cur}>{ln.price_text()}"
            f"</cbc:PriceAmount></cac:Price></cac:{line_tag}>",
        ]
    out.append(f"</{root}>")
    return "\n".join(out) + "\n"
