"""The GST e-invoice writer: schema 1.1 uploads and the portal's signed answer, for the seed
and tests."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from recon.documents.formats.reading import CREDIT_NOTE, DEBIT_NOTE, INVOICE, PartyIds
from recon.documents.layouts import Document


def _rupees(paise_amount: int) -> Decimal:
    return Decimal(paise_amount) / 100


def _json(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value) if value != value.to_integral_value() else int(value)
    raise TypeError(type(value).__name__)


def upload(doc: Document, seller: PartyIds, kind: str = INVOICE, cites: Iterable[str] = (),
           tax_rate: int = 18, buyer_gstin: str = "03AAACD1234E1Z5") -> dict:
    """The schema 1.1 upload for one document: intra-state (CGST + SGST) when the seller's
    state code (the GSTIN's first two digits) is the buyer's, IGST otherwise."""
    typ = {CREDIT_NOTE: "CRN", DEBIT_NOTE: "DBN"}.get(kind, "INV")
    gstin = seller.gstin or ""
    intra = gstin[:2] == buyer_gstin[:2]
    items, sums = [], dict.fromkeys(("AssVal", "CgstVal", "SgstVal", "IgstVal"), 0)
    for n, ln in enumerate(doc.lines, 1):
        amount = ln.amount_paise
        tax = (amount * tax_rate + 50) // 100
        half = (amount * tax_rate + 100) // 200
        cgst = sgst = half if intra else 0
        igst = 0 if intra else tax
        items.append({
            "SlNo": str(n), "PrdDesc": ln.description, "IsServc": "N", "HsnCd": "10063020",
            "OrdLineRef": ln.sku, "Qty": ln.qty, "Unit": ln.unit or "PCS",
            "UnitPrice": ln.price if ln.price is not None else _rupees(ln.unit_price_paise),
            "TotAmt": _rupees(amount), "Discount": 0,
            "AssAmt": _rupees(amount), "GstRt": tax_rate, "IgstAmt": _rupees(igst),
            "CgstAmt": _rupees(cgst), "SgstAmt": _rupees(sgst),
            "TotItemVal": _rupees(amount + cgst + sgst + igst),
        })
        for key, value in (("AssVal", amount), ("CgstVal", cgst), ("SgstVal", sgst),
                           ("IgstVal", igst)):
            sums[key] += value
    y, m, d = doc.business_date.split("-")
    refs: dict[str, Any] = {"ContrDtls": [{"PORefr": doc.po_number}]}
    cited = list(cites)
    if cited:
        refs["PrecDocDtls"] = [{"InvNo": c, "InvDt": f"{d}/{m}/{y}"} for c in cited]
    return {
        "Version": "1.1",
        "TranDtls": {"TaxSch": "GST", "SupTyp": "B2B", "RegRev": "N", "IgstOnIntra": "N"},
        "DocDtls": {"Typ": typ, "No": doc.invoice_no, "Dt": f"{d}/{m}/{y}"},
        "SellerDtls": {"Gstin": gstin, "LglNm": seller.name or "", "Addr1": "-", "Loc": "-",
                       "Pin": 141001, "Stcd": gstin[:2]},
        "BuyerDtls": {"Gstin": buyer_gstin, "LglNm": "Distributor", "Pos": buyer_gstin[:2],
                      "Addr1": "-", "Loc": "-", "Pin": 141001, "Stcd": buyer_gstin[:2]},
        "ItemList": items,
        "ValDtls": {**{k: _rupees(v) for k, v in sums.items()},
                    "TotInvVal": _rupees(sum(sums.values()))},
        "RefDtls": refs,
    }


def write(doc: Document, seller: PartyIds, kind: str = INVOICE, cites: Iterable[str] = (),
          tax_rate: int = 18, signed: bool = False) -> str:
    """The upload as JSON text; `signed` gives the portal's answer instead (an `Irn`, an
    `AckNo` and the invoice inside a JWT whose signature is a placeholder: only the portal
    can sign)."""
    invoice = upload(doc, seller, kind, cites, tax_rate)
    if not signed:
        return json.dumps(invoice, default=_json, ensure_ascii=False, indent=1) + "\n"
    irn = hashlib.sha256(f"{seller.gstin}|{doc.business_date[:4]}|{invoice['DocDtls']['Typ']}|"
                         f"{doc.invoice_no}".encode()).hexdigest()
    ack = int(hashlib.sha256(irn.encode()).hexdigest()[:14], 16) % 10**15
    inner = {"AckNo": ack, "AckDt": f"{doc.business_date} 10:00:00", "Irn": irn, **invoice}

    def part(obj: Any) -> str:
        raw = json.dumps(obj, default=_json, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    token = ".".join([part({"alg": "RS256", "typ": "JWT"}),
                      part({"data": json.dumps(inner, default=_json), "iss": "NIC"}),
                      base64.urlsafe_b64encode(b"placeholder signature").decode().rstrip("=")])
    answer = {"AckNo": ack, "AckDt": inner["AckDt"], "Irn": irn, "SignedInvoice": token,
              "Status": "ACT"}
    return json.dumps(answer, indent=1) + "\n"
