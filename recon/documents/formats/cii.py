"""UN/CEFACT Cross Industry Invoice (CII D16B, the XML of Factur-X, ZUGFeRD 2 and XRechnung, and
the older CrossIndustryDocument of ZUGFeRD 1.0, the same terms under CII D13B names): read exactly.

Fields read: `rsm:ExchangedDocument` (`ram:ID`, `ram:TypeCode`: 380 invoice, 381 credit note,
383 debit note, 384 corrected invoice, 389 self-billed; `ram:IssueDateTime/udt:DateTimeString`
in format 102, YYYYMMDD); each `ram:IncludedSupplyChainTradeLineItem` (`ram:LineID`, the product's
`ram:BuyerAssignedID` / `ram:SellerAssignedID` / `ram:GlobalID` / `ram:Name`, the line's
`ram:BuyerOrderReferencedDocument/ram:LineID`, `ram:NetPriceProductTradePrice/ram:ChargeAmount`
per `ram:BasisQuantity`, `ram:BilledQuantity@unitCode`, line allowances and charges, the tax rate,
`ram:LineTotalAmount`); the header's `ram:SellerTradeParty` (`ram:SpecifiedTaxRegistration/ram:ID`
with `@schemeID` VA for a VAT id, FC for a tax number; `ram:URIUniversalCommunication/ram:URIID`
as the endpoint; `ram:GlobalID`), `ram:BuyerOrderReferencedDocument/ram:IssuerAssignedID` (the
PO), `ram:InvoiceReferencedDocument/ram:IssuerAssignedID` and the agreement's
`ram:AdditionalReferencedDocument/ram:IssuerAssignedID` (what a credit note answers),
`ram:InvoiceCurrencyCode`, `ram:ApplicableTradeTax` (any number of rates), header allowances and
charges, and `ram:SpecifiedTradeSettlementHeaderMonetarySummation`.

Rules (EN 16931, as for UBL): lines sum exactly to LineTotalAmount; TaxBasisTotal = LineTotal -
AllowanceTotal + ChargeTotal; each rate's tax is its basis times its rate within 0.01, and they
sum to TaxTotalAmount (the one in the invoice currency); GrandTotal = TaxBasisTotal + tax;
DuePayable = GrandTotal - TotalPrepaid + Rounding. A line's total is taken as stated: EN 16931
does not bind it to quantity x price (published CII samples state price bases and line charges
that do not multiply out), and the run compares the line total / quantity with the PO anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from decimal import Decimal
from xml.etree.ElementTree import Element

from recon.documents.formats.reading import (
    CREDIT_NOTE,
    DEBIT_NOTE,
    INVOICE,
    PartyIds,
    Reading,
    ReadingLine,
    Total,
    decimal,
    optional_decimal,
)
from recon.documents.formats.xml import Finder, local, namespace, parse
from recon.domain.errors import RefusedDocument, UnreadableInvoice

RSM = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
RAM = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
UDT = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"
QDT = "urn:un:unece:uncefact:data:standard:QualifiedDataType:100"
FORMAT = "cii"
CENT = Decimal("0.01")
CREDIT_CODES = {"381", "261", "262", "296", "308", "396", "420", "458", "532"}
DEBIT_CODES = {"383", "80", "84"}
# The rest of UNTDID 1001's invoice codes that EN 16931 accepts (BT-3), less 325, a pro-forma,
# which asks for no payment. Any other code (220 an order, 351 a despatch advice, 632 a goods
# receipt...) is a document of another kind, refused by name.
INVOICE_CODES = {"71", "82", "102", "130", "202", "203", "204", "211", "218", "219", "295",
                 "326", "331", "380", "382", "384", "385", "386", "387", "388", "389", "390",
                 "393", "394", "395", "456", "457", "527", "553", "575", "623", "633", "751",
                 "780", "817", "870", "875", "876", "877", "935"}
OTHER_KINDS = {"220": "an order", "221": "a blanket order", "231": "an order response",
               "325": "a pro-forma invoice", "351": "a despatch advice (a delivery note)",
               "270": "a delivery note", "632": "a goods receipt", "310": "an offer"}
_OTHER_ROOT = "urn:un:unece:uncefact:data:standard:CrossIndustry"

_F = Finder({"rsm": RSM, "ram": RAM, "udt": UDT})
# ZUGFeRD 1.0 (2014): the same business terms under the CII D13B names it was built on.
ZF1_RSM = "urn:ferd:CrossIndustryDocument:invoice:1p0"
_ZF1 = Finder(
    {"rsm": ZF1_RSM, "ram": "urn:un:unece:uncefact:data:standard:"
                            "ReusableAggregateBusinessInformationEntity:12",
     "udt": "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:15"},
    {"ExchangedDocumentContext": "SpecifiedExchangedDocumentContext",
     "ExchangedDocument": "HeaderExchangedDocument",
     "SupplyChainTradeTransaction": "SpecifiedSupplyChainTradeTransaction",
     "ApplicableHeaderTradeAgreement": "ApplicableSupplyChainTradeAgreement",
     "ApplicableHeaderTradeSettlement": "ApplicableSupplyChainTradeSettlement",
     "SpecifiedTradeSettlementHeaderMonetarySummation": "SpecifiedTradeSettlementMonetarySummation",
     "SpecifiedTradeSettlementLineMonetarySummation": "SpecifiedTradeSettlementMonetarySummation",
     "SpecifiedLineTradeAgreement": "SpecifiedSupplyChainTradeAgreement",
     "SpecifiedLineTradeDelivery": "SpecifiedSupplyChainTradeDelivery",
     "SpecifiedLineTradeSettlement": "SpecifiedSupplyChainTradeSettlement",
     "RateApplicablePercent": "ApplicablePercent",
     "IssuerAssignedID": "ID"})


def is_cii(root: Element) -> bool:
    return ((namespace(root.tag), local(root.tag)) in
            ((RSM, "CrossIndustryInvoice"), (ZF1_RSM, "CrossIndustryDocument")))


def other_document(root: Element) -> str | None:
    """What a UN/CEFACT cross-industry document that is no invoice is (a CrossIndustryOrder, a
    CrossIndustryDespatchAdvice...), or None."""
    ns, name = namespace(root.tag), local(root.tag)
    if ns.startswith(_OTHER_ROOT) and name.startswith("CrossIndustry") and not is_cii(root):
        return f"a UN/CEFACT {name}, not an invoice"
    return None


def _charges(f: Finder, node: Element | None, charge: bool) -> Decimal:
    total = Decimal("0")
    for ac in f.all(node, "ram:SpecifiedTradeAllowanceCharge"):
        flag = (f.text(ac, "ram:ChargeIndicator/udt:Indicator") or "").lower() == "true"
        if flag == charge:
            total += decimal(f.text(ac, "ram:ActualAmount"), "AllowanceCharge ActualAmount")
    return total


def _iso(text: str | None) -> str | None:
    if text and len(text) == 8 and text.isdigit():
        try:
            return date(int(text[:4]), int(text[4:6]), int(text[6:])).isoformat()
        except ValueError:
            return None
    return None


def _sender(f: Finder, party: Element | None) -> PartyIds:
    vat = gstin = None
    for reg in f.all(party, "ram:SpecifiedTaxRegistration/ram:ID"):
        value = (reg.text or "").strip()
        if not value:
            continue
        if len(value) == 15 and value[:2].isdigit():
            gstin = gstin or value
        elif reg.get("schemeID", "VA") == "VA":
            vat = vat or value
    endpoint = None
    uri = f.one(party, "ram:URIUniversalCommunication/ram:URIID")
    if uri is not None and uri.text and uri.text.strip():
        scheme = uri.get("schemeID", "").strip()
        endpoint = f"{scheme}:{uri.text.strip()}" if scheme else uri.text.strip()
    return PartyIds(gstin=gstin, vat_id=vat, endpoint=endpoint, name=f.text(party, "ram:Name"))


def _line(f: Finder, node: Element, position: int, line_numbers_ok: bool) -> ReadingLine:
    raw_id = f.text(node, "ram:AssociatedDocumentLineDocument/ram:LineID") or ""
    line_no = int(raw_id) if line_numbers_ok else position
    where = f"line {line_no}"
    product = f.one(node, "ram:SpecifiedTradeProduct")
    agreement = f.one(node, "ram:SpecifiedLineTradeAgreement")
    qty_node = f.one(node, "ram:SpecifiedLineTradeDelivery/ram:BilledQuantity")
    settlement = f.one(node, "ram:SpecifiedLineTradeSettlement")
    quantity = decimal(qty_node.text if qty_node is not None else None, f"{where} BilledQuantity")
    net = decimal(f.text(settlement, "ram:SpecifiedTradeSettlementLineMonetarySummation/"
                                      "ram:LineTotalAmount"), f"{where} LineTotalAmount")
    price = optional_decimal(f.text(agreement, "ram:NetPriceProductTradePrice/ram:ChargeAmount"),
                             f"{where} net price")
    basis = optional_decimal(f.text(agreement, "ram:NetPriceProductTradePrice/ram:BasisQuantity"),
                             f"{where} BasisQuantity")
    if basis is not None and basis <= 0:
        raise UnreadableInvoice(f"{where}: BasisQuantity {basis} is not positive")
    unit_price = price / (basis or Decimal("1")) if price is not None else None
    sku = (f.text(product, "ram:BuyerAssignedID") or f.text(product, "ram:SellerAssignedID")
           or f.text(agreement, "ram:BuyerOrderReferencedDocument/ram:LineID")
           or f.text(product, "ram:GlobalID") or f.text(product, "ram:Name") or "")
    line = ReadingLine(
        line_no=line_no, sku=sku[:64], description=(f.text(product, "ram:Name") or "")[:200],
        quantity=quantity, net_amount=net, unit_price=unit_price,
        tax_rate=optional_decimal(f.text(settlement, "ram:ApplicableTradeTax/"
                                          "ram:RateApplicablePercent"), f"{where} tax rate"),
        unit=qty_node.get("unitCode") if qty_node is not None else None,
        tax_category=f.text(settlement, "ram:ApplicableTradeTax/ram:CategoryCode") or None,
        hsn=(f.text(product, "ram:DesignatedProductClassification/ram:ClassCode") or "")[:16]
        or None,
    )
    return line


def _sum(values: Iterable[Decimal]) -> Decimal:
    return sum(values, Decimal("0"))


def read(data: bytes | str) -> Reading:
    return read_root(parse(data, "CII"))


def read_root(root: Element) -> Reading:
    if not is_cii(root):
        raise UnreadableInvoice("not a CrossIndustryInvoice")
    f = _F if namespace(root.tag) == RSM else _ZF1
    header = f.one(root, "rsm:ExchangedDocument")
    trade = f.one(root, "rsm:SupplyChainTradeTransaction")
    agreement = f.one(trade, "ram:ApplicableHeaderTradeAgreement")
    settlement = f.one(trade, "ram:ApplicableHeaderTradeSettlement")
    type_code = f.text(header, "ram:TypeCode") or "380"
    if type_code not in INVOICE_CODES | CREDIT_CODES | DEBIT_CODES:
        what = OTHER_KINDS.get(type_code, "a document of another kind")
        raise RefusedDocument(f"CII: type code {type_code} is {what}, not an invoice",
                              f"a CII document of type code {type_code}: {what}, not an invoice")
    test = f.text(root, "rsm:ExchangedDocumentContext/ram:TestIndicator/udt:Indicator") or ""
    if test.lower() == "true":
        raise RefusedDocument(
            "CII: marked as a test document (ExchangedDocumentContext/TestIndicator true)",
            "marked as a test document (ExchangedDocumentContext/TestIndicator true): a test "
            "invoice is not a bill")
    kind = (CREDIT_NOTE if type_code in CREDIT_CODES
            else DEBIT_NOTE if type_code in DEBIT_CODES else INVOICE)
    currency = f.text(settlement, "ram:InvoiceCurrencyCode")
    # A line item with neither a quantity nor an amount is a note between lines (ZUGFeRD's
    # EXTENDED profile writes them): it bills nothing and is left out.
    nodes = [n for n in f.all(trade, "ram:IncludedSupplyChainTradeLineItem")
             if f.one(n, "ram:SpecifiedLineTradeDelivery/ram:BilledQuantity") is not None
             or f.one(n, "ram:SpecifiedLineTradeSettlement/"
                         "ram:SpecifiedTradeSettlementLineMonetarySummation") is not None]
    ids = [f.text(n, "ram:AssociatedDocumentLineDocument/ram:LineID") or "" for n in nodes]
    numbered = (all(i.isdigit() and 1 <= int(i) <= 500 for i in ids)
                and len(set(map(int, ids))) == len(ids)) if ids else False
    lines, totals = [], []
    for position, node in enumerate(nodes, 1):
        lines.append(_line(f, node, position, numbered))
    summary = f.one(settlement, "ram:SpecifiedTradeSettlementHeaderMonetarySummation")

    def amount(tag: str) -> Decimal | None:
        return optional_decimal(f.text(summary, f"ram:{tag}"), f"MonetarySummation/{tag}")

    taxes = f.all(settlement, "ram:ApplicableTradeTax")
    tax_parts = []
    for n, tax in enumerate(taxes, 1):
        calculated = decimal(f.text(tax, "ram:CalculatedAmount"), f"tax {n} CalculatedAmount")
        basis = optional_decimal(f.text(tax, "ram:BasisAmount"), f"tax {n} BasisAmount")
        rate = optional_decimal(f.text(tax, "ram:RateApplicablePercent"), f"tax {n} rate")
        tax_parts.append(calculated)
        if basis is not None and rate is not None:
            totals.append(Total(f"tax at {rate}% (ApplicableTradeTax {n})", calculated,
                                (basis * rate / 100).quantize(CENT), CENT))
    tax_total = None
    for node in f.all(summary, "ram:TaxTotalAmount"):
        if currency is None or node.get("currencyID") in (None, currency):
            tax_total = decimal(node.text, "TaxTotalAmount")
            break
    line_total, basis_total = amount("LineTotalAmount"), amount("TaxBasisTotalAmount")
    allowances = amount("AllowanceTotalAmount") or Decimal("0")
    charges = amount("ChargeTotalAmount") or Decimal("0")
    grand, due = amount("GrandTotalAmount"), amount("DuePayableAmount")
    if line_total is not None:
        totals.append(Total("LineTotalAmount", line_total, _sum(ln.net_amount for ln in lines)))
    totals.append(Total("AllowanceTotalAmount", allowances, _charges(f, settlement, False)))
    totals.append(Total("ChargeTotalAmount", charges, _charges(f, settlement, True)))
    if basis_total is not None and line_total is not None:
        totals.append(Total("TaxBasisTotalAmount", basis_total, line_total - allowances + charges))
    if tax_total is not None and tax_parts:
        totals.append(Total("TaxTotalAmount", tax_total, _sum(tax_parts)))
    if grand is not None and basis_total is not None:
        totals.append(Total("GrandTotalAmount", grand, basis_total + (tax_total or Decimal("0"))))
    if due is not None and grand is not None:
        totals.append(Total("DuePayableAmount", due,
                            grand - (amount("TotalPrepaidAmount") or Decimal("0"))
                            + (amount("RoundingAmount") or Decimal("0"))))
    # What a credit note answers: the preceding invoice (BT-25) and any additional referenced
    # document of the agreement (BT-17/18/122), where a supplier may quote our claim.
    cites = list(dict.fromkeys(c for c in (
        f.text(ref, "ram:IssuerAssignedID") for ref in
        f.all(settlement, "ram:InvoiceReferencedDocument")
        + f.all(agreement, "ram:AdditionalReferencedDocument")) if c))
    notes = []
    guideline = f.text(root, "rsm:ExchangedDocumentContext/"
                              "ram:GuidelineSpecifiedDocumentContextParameter/ram:ID") or ""
    if not lines and ("minimum" in guideline.lower() or "basicwl" in guideline.lower()):
        notes.append(f"the {guideline} profile carries no lines: ask the supplier for the "
                     "BASIC, EN 16931 or EXTENDED profile")
    return Reading(
        format=FORMAT, kind=kind, number=f.text(header, "ram:ID"), notes=notes,
        issued_on=_iso(f.text(header, "ram:IssueDateTime/udt:DateTimeString")),
        sender=_sender(f, f.one(agreement, "ram:SellerTradeParty")),
        po_number=f.text(agreement, "ram:BuyerOrderReferencedDocument/ram:IssuerAssignedID"),
        currency=currency, lines=lines, totals=totals, cites=cites,
        payable=due if due is not None else grand,
        buyer_gstin=_sender(f, f.one(agreement, "ram:BuyerTradeParty")).gstin,
    )
