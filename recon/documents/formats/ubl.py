"""UBL 2.1 Invoice and CreditNote (Peppol BIS Billing 3.0, EN 16931): read exactly, and written.

Fields read: `cbc:ID`, `cbc:IssueDate`, `cbc:InvoiceTypeCode` / `cbc:CreditNoteTypeCode` (383 is a
debit note), `cbc:DocumentCurrencyCode`, `cac:OrderReference/cbc:ID` (the PO),
`cac:BillingReference/*/cbc:ID`, `cac:DiscrepancyResponse/cbc:ReferenceID` and
`cac:AdditionalDocumentReference/cbc:ID` (what a credit note answers), the supplier's
`cac:AccountingSupplierParty/cac:Party` (`cbc:EndpointID@schemeID`, `cac:PartyTaxScheme/cbc:CompanyID`,
`cac:PartyLegalEntity/cbc:CompanyID`, names), each `cac:InvoiceLine` / `cac:CreditNoteLine`
(`cbc:ID`, `cbc:InvoicedQuantity` / `cbc:CreditedQuantity` with `@unitCode`,
`cbc:LineExtensionAmount`, `cac:OrderLineReference/cbc:LineID`, `cac:Item/cbc:Name`, the item's
buyer's / seller's / standard identification, `cac:Price/cbc:PriceAmount` per
`cac:Price/cbc:BaseQuantity`, line `cac:AllowanceCharge`), document `cac:AllowanceCharge`,
`cac:TaxTotal` (with its subtotals, any number of rates) and `cac:LegalMonetaryTotal`.
A Peppol StandardBusinessDocument envelope around the invoice is opened.

Rules (EN 16931's own, BR-CO-10..16, and Peppol's R120): the lines' net amounts sum exactly to
LineExtensionAmount; TaxExclusive = LineExtension - AllowanceTotal + ChargeTotal; the tax
subtotals sum to the tax total, and each is its taxable amount times its rate within 0.01;
TaxInclusive = TaxExclusive + tax; Payable = TaxInclusive - Prepaid + Rounding; in a Peppol
document (CustomizationID naming Peppol) a line's net is quantity x price / base quantity (rounded
to 0.01) + its charges - its allowances, within 0.01 (R120; plain EN 16931 has no such rule).
The line's SKU is, in this order, the buyer's item id (our own code), the seller's item id, the
order line reference, the standard item id, the item's name (then usually an unknown SKU, parked
by step 3 for a person to see).
"""

from __future__ import annotations

from collections.abc import Iterable
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
from recon.domain.errors import UnreadableInvoice

INVOICE_NS = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
CREDIT_NOTE_NS = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
CAC = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
SBD_NS = "http://www.unece.org/cefact/namespaces/StandardBusinessDocumentHeader"
ROOTS = {(INVOICE_NS, "Invoice"), (CREDIT_NOTE_NS, "CreditNote")}
FORMAT = "ubl"
CENT = Decimal("0.01")

_F = Finder({"cac": CAC, "cbc": CBC})
GSTIN_SHAPE = 15


def is_ubl(root: Element) -> bool:
    return (namespace(root.tag), local(root.tag)) in ROOTS or _enveloped(root) is not None


_UBL_PREFIX = "urn:oasis:names:specification:ubl:schema:xsd:"
_OTHER_KINDS = {"DespatchAdvice": "a despatch advice (a delivery note)", "Order": "an order",
                "OrderResponse": "an order response", "OrderChange": "an order change",
                "ReceiptAdvice": "a goods receipt", "Catalogue": "a catalogue",
                "ApplicationResponse": "a message response", "Reminder": "a payment reminder",
                "Quotation": "a quotation", "SelfBilledInvoice": "a self-billed invoice (the "
                "buyer's own)", "DebitNote": "a UBL DebitNote (recon reads a supplier's debit "
                "note as an Invoice with type code 383)"}


def other_document(root: Element) -> str | None:
    """What a UBL document that is no Invoice or CreditNote is (a DespatchAdvice, an Order...),
    bare or in a Peppol envelope, or None."""
    nodes = [root] + (list(root) if namespace(root.tag) == SBD_NS else [])
    for node in nodes:
        ns, name = namespace(node.tag), local(node.tag)
        if ns.startswith(_UBL_PREFIX) and (ns, name) not in ROOTS:
            what = _OTHER_KINDS.get(name, "a document of another kind")
            return what if name == "DebitNote" else f"a UBL {name}: {what}, not an invoice"
    return None


def _enveloped(root: Element) -> Element | None:
    if namespace(root.tag) != SBD_NS:
        return None
    for child in root:
        if (namespace(child.tag), local(child.tag)) in ROOTS:
            return child
    return None


def _sum(values: Iterable[Decimal]) -> Decimal:
    return sum(values, Decimal("0"))


def _charges(node: Element | None, charge: bool) -> Decimal:
    total = Decimal("0")
    for ac in _F.all(node, "cac:AllowanceCharge"):
        flag = (_F.text(ac, "cbc:ChargeIndicator") or "").lower() == "true"
        if flag == charge:
            total += decimal(_F.text(ac, "cbc:Amount"), "AllowanceCharge/Amount")
    return total


def _sender(party: Element | None) -> PartyIds:
    endpoint = _F.one(party, "cbc:EndpointID")
    endpoint_id = None
    if endpoint is not None and endpoint.text and endpoint.text.strip():
        scheme = endpoint.get("schemeID", "").strip()
        endpoint_id = f"{scheme}:{endpoint.text.strip()}" if scheme else endpoint.text.strip()
    tax_ids = [t for t in (_F.text(s, "cbc:CompanyID")
                           for s in _F.all(party, "cac:PartyTaxScheme")) if t]
    gstin = next((t for t in tax_ids if len(t) == GSTIN_SHAPE and t[:2].isdigit()), None)
    vat = next((t for t in tax_ids if t != gstin), None)
    name = _F.text(party, "cac:PartyName/cbc:Name") or _F.text(
        party, "cac:PartyLegalEntity/cbc:RegistrationName")
    return PartyIds(gstin=gstin, vat_id=vat, endpoint=endpoint_id, name=name)


def _line_numbers(lines: list[Element]) -> list[int]:
    """The lines' own ids when they are distinct whole numbers 1..500, else their positions."""
    ids = [_F.text(node, "cbc:ID") or "" for node in lines]
    if all(i.isdigit() and 1 <= int(i) <= 500 for i in ids) and len(set(map(int, ids))) == len(ids):
        return [int(i) for i in ids]
    return list(range(1, len(lines) + 1))


def _line(node: Element, line_no: int, qty_tag: str) -> tuple[ReadingLine, Total]:
    where = f"line {line_no}"
    qty_node = _F.one(node, f"cbc:{qty_tag}")
    quantity = decimal(qty_node.text if qty_node is not None else None, f"{where} {qty_tag}")
    net = decimal(_F.text(node, "cbc:LineExtensionAmount"), f"{where} LineExtensionAmount")
    price = optional_decimal(_F.text(node, "cac:Price/cbc:PriceAmount"), f"{where} PriceAmount")
    base = optional_decimal(_F.text(node, "cac:Price/cbc:BaseQuantity"), f"{where} BaseQuantity")
    if base is not None and base <= 0:
        raise UnreadableInvoice(f"{where}: BaseQuantity {base} is not positive")
    unit_price = price / (base or Decimal("1")) if price is not None else None
    item = _F.one(node, "cac:Item")
    sku = (_F.text(item, "cac:BuyersItemIdentification/cbc:ID")
           or _F.text(item, "cac:SellersItemIdentification/cbc:ID")
           or _F.text(node, "cac:OrderLineReference/cbc:LineID")
           or _F.text(item, "cac:StandardItemIdentification/cbc:ID")
           or _F.text(item, "cbc:Name") or "")
    rate = optional_decimal(_F.text(item, "cac:ClassifiedTaxCategory/cbc:Percent"),
                            f"{where} tax rate")
    # The HSN is a commodity classification (listID "HSN"; an Indian UBL may name it otherwise)
    hsn = next((c.text.strip() for c in _F.all(item, "cac:CommodityClassification/"
                                                     "cbc:ItemClassificationCode")
                if c.text and c.text.strip()
                and c.get("listID", "HSN").upper() in ("HSN", "HSNSAC", "SAC")), None)
    line = ReadingLine(
        line_no=line_no, sku=sku[:64],
        description=(_F.text(item, "cbc:Name") or _F.text(item, "cbc:Description") or "")[:200],
        quantity=quantity, net_amount=net, unit_price=unit_price, tax_rate=rate,
        unit=qty_node.get("unitCode") if qty_node is not None else None,
        hsn=hsn[:16] if hsn else None,
        tax_category=_F.text(item, "cac:ClassifiedTaxCategory/cbc:ID") or None,
    )
    computed = ((quantity * unit_price).quantize(CENT) if unit_price is not None else net)
    computed += _charges(node, True) - _charges(node, False)
    return line, Total(f"{where} LineExtensionAmount", net, computed, CENT)


def _tax_total(root: Element, currency: str | None) -> tuple[Decimal, list[Total]]:
    """The tax total in the document's currency (a second TaxTotal may state it in the tax
    currency, without subtotals), and its checks."""
    totals = _F.all(root, "cac:TaxTotal")
    chosen = None
    for node in totals:
        amount = _F.one(node, "cbc:TaxAmount")
        if amount is not None and (currency is None or amount.get("currencyID") in (None, currency)):
            chosen = node
            break
    if chosen is None:
        return Decimal("0"), []
    tax = decimal(_F.text(chosen, "cbc:TaxAmount"), "TaxTotal/TaxAmount")
    subtotals = _F.all(chosen, "cac:TaxSubtotal")
    checks = []
    if subtotals:
        parts = []
        for n, sub in enumerate(subtotals, 1):
            taxable = decimal(_F.text(sub, "cbc:TaxableAmount"), f"TaxSubtotal {n} TaxableAmount")
            amount = decimal(_F.text(sub, "cbc:TaxAmount"), f"TaxSubtotal {n} TaxAmount")
            rate = optional_decimal(_F.text(sub, "cac:TaxCategory/cbc:Percent"),
                                    f"TaxSubtotal {n} Percent")
            parts.append(amount)
            if rate is not None:
                checks.append(Total(f"tax at {rate}% (subtotal {n})", amount,
                                    (taxable * rate / 100).quantize(CENT), CENT))
        checks.append(Total("TaxTotal/TaxAmount", tax, _sum(parts)))
    return tax, checks


def read(data: bytes | str) -> Reading:
    return read_root(parse(data, "UBL"))


def read_root(root: Element) -> Reading:
    doc = root if (namespace(root.tag), local(root.tag)) in ROOTS else _enveloped(root)
    if doc is None:
        raise UnreadableInvoice("not a UBL Invoice or CreditNote")
    credit = local(doc.tag) == "CreditNote"
    type_code = _F.text(doc, "cbc:CreditNoteTypeCode" if credit else "cbc:InvoiceTypeCode")
    kind = CREDIT_NOTE if credit or type_code == "381" else (
        DEBIT_NOTE if type_code == "383" else INVOICE)
    currency = _F.text(doc, "cbc:DocumentCurrencyCode")
    line_nodes = _F.all(doc, "cac:CreditNoteLine" if credit else "cac:InvoiceLine")
    qty_tag = "CreditedQuantity" if credit else "InvoicedQuantity"
    lines, totals = [], []
    # Peppol's R120 binds a line's amount to its price; EN 16931 alone does not (its own UBL
    # examples state lines that do not multiply out), so only a Peppol document is held to it.
    peppol = "peppol" in (_F.text(doc, "cbc:CustomizationID") or "").lower()
    for node, line_no in zip(line_nodes, _line_numbers(line_nodes), strict=True):
        line, check = _line(node, line_no, qty_tag)
        lines.append(line)
        if peppol:
            totals.append(check)
    money = _F.one(doc, "cac:LegalMonetaryTotal")
    tax, tax_checks = _tax_total(doc, currency)
    payable = None
    if money is not None:
        def amount(tag: str) -> Decimal | None:
            return optional_decimal(_F.text(money, f"cbc:{tag}"), f"LegalMonetaryTotal/{tag}")

        line_total = amount("LineExtensionAmount")
        allowances = amount("AllowanceTotalAmount") or Decimal("0")
        charges = amount("ChargeTotalAmount") or Decimal("0")
        exclusive, inclusive = amount("TaxExclusiveAmount"), amount("TaxInclusiveAmount")
        payable = amount("PayableAmount")
        if line_total is not None:
            totals.append(Total("LegalMonetaryTotal/LineExtensionAmount", line_total,
                                _sum(ln.net_amount for ln in lines)))
        totals.append(Total("AllowanceTotalAmount", allowances, _charges(doc, False)))
        totals.append(Total("ChargeTotalAmount", charges, _charges(doc, True)))
        if exclusive is not None and line_total is not None:
            totals.append(Total("TaxExclusiveAmount", exclusive,
                                line_total - allowances + charges))
        if inclusive is not None and exclusive is not None:
            totals.append(Total("TaxInclusiveAmount", inclusive, exclusive + tax))
        if payable is not None and inclusive is not None:
            totals.append(Total("PayableAmount", payable,
                                inclusive - (amount("PrepaidAmount") or Decimal("0"))
                                + (amount("PayableRoundingAmount") or Decimal("0"))))
    totals += tax_checks
    # What a credit note answers: any BillingReference (an invoice, a credit or debit note, a
    # self-billed one), the DiscrepancyResponse's reference, an AdditionalDocumentReference.
    cites = [cited for billing in _F.all(doc, "cac:BillingReference") for child in billing
             if (cited := _F.text(child, "cbc:ID"))]
    cites += [c for c in (_F.text(n, "cbc:ReferenceID") for n in
                          _F.all(doc, "cac:DiscrepancyResponse")) if c]
    cites += [c for c in (_F.text(n, "cbc:ID") for n in
                          _F.all(doc, "cac:AdditionalDocumentReference")) if c]
    cites = list(dict.fromkeys(cites))
    return Reading(
        format=FORMAT, kind=kind, number=_F.text(doc, "cbc:ID"),
        issued_on=_F.text(doc, "cbc:IssueDate"),
        sender=_sender(_F.one(doc, "cac:AccountingSupplierParty/cac:Party")),
        po_number=_F.text(doc, "cac:OrderReference/cbc:ID"), currency=currency,
        lines=lines, totals=totals, cites=cites, payable=payable,
        buyer_gstin=_sender(_F.one(doc, "cac:AccountingCustomerParty/cac:Party")).gstin,
    )
