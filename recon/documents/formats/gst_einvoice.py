"""GST e-invoice JSON (the IRP's schema 1.1): the invoice as the supplier uploads it, the
signed answer the portal gives back (`Irn`, `AckNo`, `SignedInvoice`), read exactly, and written.

Fields read: `DocDtls` (`Typ` INV | CRN | DBN, `No`, `Dt` as DD/MM/YYYY), `SellerDtls.Gstin` (and
`LglNm`), `RefDtls.ContrDtls[].PORefr` (the PO), `RefDtls.PrecDocDtls[].InvNo` and `.OthRefNo` and
`RefDtls.ContrDtls[].ExtRefr` (what a credit or debit note answers), `BuyerDtls.Gstin` and `.Pos`
(the place of supply), each `ItemList[]` entry (`SlNo`, `PrdDesc`, `HsnCd`, `Barcde`, `OrdLineRef`,
`Qty`, `FreeQty`, `Unit`, `UnitPrice`, `TotAmt`, `Discount`, `AssAmt`, `GstRt`, `IgstAmt`,
`CgstAmt`, `SgstAmt`, cess amounts, `OthChrg`, `TotItemVal`) and `ValDtls` (`AssVal`, `CgstVal`,
`SgstVal`, `IgstVal`, `CesVal`, `StCesVal`, `Discount`, `OthChrg`, `RndOffAmt`, `TotInvVal`). A
signed answer is opened: the invoice is the `data` inside the JWT's payload (`SignedInvoice`), and
its `Irn` must be the one beside it. The portal's signature is not verified: that needs the portal's
public key, and a night runs with no network.

Rules (the IRP's own validations, which allow a rupee either way): `TotAmt` = `Qty` x
`UnitPrice`; `AssAmt` = `TotAmt` - `Discount`; the tax of a line is `AssAmt` x `GstRt` (IGST, or
half each as CGST and SGST, which must be equal); `TotItemVal` = `AssAmt` + taxes + cess +
`OthChrg`; each `ValDtls` sum is the sum of its item amounts; `TotInvVal` = `AssVal` + taxes +
cess + `OthChrg` - `Discount` + `RndOffAmt`. All within ₹1. Amounts are rupees (INR). `FreeQty`
is not billed and not counted. The line's SKU is `OrdLineRef` (the PO line, which is the SKU in
our orders), else `Barcde`, else `PrdSlNo`, else `PrdDesc`.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import date
from decimal import Decimal
from typing import Any

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
from recon.domain.errors import UnreadableInvoice

FORMAT = "gst-einvoice"
RUPEE = Decimal("1")
KINDS = {"INV": INVOICE, "CRN": CREDIT_NOTE, "DBN": DEBIT_NOTE}
ZERO = Decimal("0")


def looks_like(data: dict) -> bool:
    return isinstance(data, dict) and ("DocDtls" in data or "SignedInvoice" in data
                                       or isinstance(data.get("Data"), str | dict))


def _load(text: str | bytes) -> Any:
    try:
        return json.loads(text, parse_float=Decimal)
    except (ValueError, RecursionError) as exc:
        raise UnreadableInvoice(f"GST e-invoice: not JSON ({str(exc)[:80]})") from None


def _jwt_payload(token: str) -> dict:
    parts = token.split(".")
    if len(parts) != 3:
        raise UnreadableInvoice("GST e-invoice: SignedInvoice is not a JWT")
    body = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        payload = _load(base64.urlsafe_b64decode(body))
    except (binascii.Error, ValueError):
        raise UnreadableInvoice("GST e-invoice: SignedInvoice payload is not base64 JSON") from None
    if not isinstance(payload, dict):
        raise UnreadableInvoice("GST e-invoice: SignedInvoice payload is not an object")
    return payload


def invoice_of(data: Any) -> dict:
    """The invoice inside whatever the supplier sent: the upload itself, the portal's answer
    (`{"Irn", "SignedInvoice", ...}`) or the API envelope around it (`{"Status", "Data"}`)."""
    if isinstance(data, dict) and "DocDtls" not in data and "Data" in data:
        inner = data["Data"]
        if isinstance(inner, str):
            inner = _load(inner) if inner.lstrip().startswith("{") else None
        if not isinstance(inner, dict):
            raise UnreadableInvoice("GST e-invoice: the portal's Data is encrypted or not JSON")
        data = inner
    if not isinstance(data, dict):
        raise UnreadableInvoice("GST e-invoice: not a JSON object")
    if "DocDtls" in data:
        return data
    token = data.get("SignedInvoice")
    if not isinstance(token, str):
        raise UnreadableInvoice("GST e-invoice: no DocDtls and no SignedInvoice")
    payload = _jwt_payload(token)
    inner = payload.get("data")
    if isinstance(inner, str):
        inner = _load(inner)
    if not isinstance(inner, dict) or "DocDtls" not in inner:
        raise UnreadableInvoice("GST e-invoice: the signed payload holds no invoice")
    outer_irn, inner_irn = data.get("Irn"), inner.get("Irn")
    for irn in (outer_irn, inner_irn):
        if irn is not None and not (isinstance(irn, str) and len(irn) == 64
                                    and all(c in "0123456789abcdefABCDEF" for c in irn)):
            raise UnreadableInvoice(f"GST e-invoice: Irn {str(irn)[:70]!r} is not 64 hex digits")
    if outer_irn and inner_irn and outer_irn != inner_irn:
        raise UnreadableInvoice(f"GST e-invoice: Irn {outer_irn} is not the signed one ({inner_irn})")
    return inner


def _iso(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    day, _, rest = text.strip().partition("/")
    month, _, year = rest.partition("/")
    try:
        return date(int(year), int(month), int(day)).isoformat()
    except ValueError:
        return None


def _num(item: dict, key: str, where: str) -> Decimal:
    value = item.get(key)
    return ZERO if value is None or value == "" else decimal(str(value), f"{where} {key}")


def _text(item: dict, key: str) -> str:
    value = item.get(key)
    return str(value).strip() if value is not None else ""


def _line_numbers(items: list[dict]) -> list[int]:
    ids = [_text(i, "SlNo") for i in items]
    if all(i.isdigit() and 1 <= int(i) <= 500 for i in ids) and len(set(map(int, ids))) == len(ids):
        return [int(i) for i in ids]
    return list(range(1, len(items) + 1))


def _item(item: dict, line_no: int) -> tuple[ReadingLine, list[Total], dict[str, Decimal]]:
    where = f"line {line_no}"
    qty = decimal(str(item.get("Qty", "")), f"{where} Qty")
    price = _num(item, "UnitPrice", where)
    tot, discount, ass = (_num(item, k, where) for k in ("TotAmt", "Discount", "AssAmt"))
    rate = _num(item, "GstRt", where)
    igst, cgst, sgst = (_num(item, k, where) for k in ("IgstAmt", "CgstAmt", "SgstAmt"))
    # Cess ad valorem (`CesAmt`, `StateCesAmt`: a rate on the assessable value) and specific
    # (`CesNonAdvlAmt`, `StateCesNonAdvlAmt`: per unit or per thousand sticks) are kept apart: a
    # specific cess does not grow with the price, so a claim takes it by units (docs/books.md "Tax").
    cess_ad_valorem = _num(item, "CesAmt", where) + _num(item, "StateCesAmt", where)
    cess_specific = _num(item, "CesNonAdvlAmt", where) + _num(item, "StateCesNonAdvlAmt", where)
    cess = _num(item, "CesAmt", where) + _num(item, "CesNonAdvlAmt", where)
    state_cess = _num(item, "StateCesAmt", where) + _num(item, "StateCesNonAdvlAmt", where)
    other = _num(item, "OthChrg", where)
    value = optional_decimal(None if item.get("TotItemVal") is None else str(item["TotItemVal"]),
                             f"{where} TotItemVal")
    checks = [Total(f"{where} TotAmt", tot, qty * price, RUPEE),
              Total(f"{where} AssAmt", ass, tot - discount, RUPEE)]
    if igst:
        checks.append(Total(f"{where} IgstAmt", igst, ass * rate / 100, RUPEE))
    if cgst or sgst:
        checks.append(Total(f"{where} CgstAmt (= SgstAmt)", cgst, sgst))
        checks.append(Total(f"{where} CgstAmt", cgst, ass * rate / 200, RUPEE))
    taxes = igst + cgst + sgst
    if value is not None:
        checks.append(Total(f"{where} TotItemVal", value,
                            ass + taxes + cess + state_cess + other, RUPEE))
    sku = (_text(item, "OrdLineRef") or _text(item, "Barcde") or _text(item, "PrdSlNo")
           or _text(item, "PrdDesc"))
    line = ReadingLine(line_no=line_no, sku=sku[:64], description=_text(item, "PrdDesc")[:200],
                       quantity=qty, net_amount=ass, unit_price=price, tax_rate=rate,
                       tax_amount=taxes, gross_amount=value, unit=_text(item, "Unit") or None,
                       hsn=_text(item, "HsnCd")[:16] or None, cgst=cgst, sgst=sgst, igst=igst,
                       cess=cess_ad_valorem, cess_specific=cess_specific)
    sums = {"AssVal": ass, "CgstVal": cgst, "SgstVal": sgst, "IgstVal": igst, "CesVal": cess,
            "StCesVal": state_cess}
    return line, checks, sums


def read(data: str | bytes) -> Reading:
    return read_object(_load(data))


def read_object(data: Any) -> Reading:
    invoice = invoice_of(data)
    doc = invoice.get("DocDtls") or {}
    typ = _text(doc, "Typ").upper()
    if typ not in KINDS:
        raise UnreadableInvoice(f"GST e-invoice: DocDtls.Typ {typ!r} is not INV, CRN or DBN")
    items = invoice.get("ItemList")
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise UnreadableInvoice("GST e-invoice: ItemList is not a list of items")
    lines, totals = [], []
    sums = dict.fromkeys(("AssVal", "CgstVal", "SgstVal", "IgstVal", "CesVal", "StCesVal"), ZERO)
    for item, line_no in zip(items, _line_numbers(items), strict=True):
        line, checks, parts = _item(item, line_no)
        lines.append(line)
        totals += checks
        for key, amount in parts.items():
            sums[key] += amount
    values = invoice.get("ValDtls") or {}
    if not isinstance(values, dict):
        raise UnreadableInvoice("GST e-invoice: ValDtls is not an object")
    stated = {k: _num(values, k, "ValDtls") for k in sums}
    for key, computed in sums.items():
        if key in values:
            totals.append(Total(f"ValDtls.{key}", stated[key], computed, RUPEE))
    payable = None
    if "TotInvVal" in values:
        payable = _num(values, "TotInvVal", "ValDtls")
        totals.append(Total("ValDtls.TotInvVal", payable,
                            sum(stated.values(), ZERO) + _num(values, "OthChrg", "ValDtls")
                            - _num(values, "Discount", "ValDtls")
                            + _num(values, "RndOffAmt", "ValDtls"), RUPEE))
    refs = invoice.get("RefDtls") if isinstance(invoice.get("RefDtls"), dict) else {}
    contracts = [c for c in refs.get("ContrDtls") or [] if isinstance(c, dict)]
    po = next((_text(c, "PORefr") for c in contracts if _text(c, "PORefr")), None)
    # What a credit or debit note answers: each preceding document's number and its other
    # reference (`OthRefNo`, where a supplier quotes our debit note), and a contract's external
    # reference (`ExtRefr`); said once each, in the document's order.
    cites = list(dict.fromkeys(
        _text(p, key) for group, keys in (("PrecDocDtls", ("InvNo", "OthRefNo")),
                                          ("ContrDtls", ("ExtRefr",)))
        for p in (refs.get(group) if isinstance(refs.get(group), list) else [])
        if isinstance(p, dict) for key in keys if _text(p, key)))
    seller = invoice.get("SellerDtls") if isinstance(invoice.get("SellerDtls"), dict) else {}
    buyer = invoice.get("BuyerDtls") if isinstance(invoice.get("BuyerDtls"), dict) else {}
    # The place of supply is the buyer's `Pos` (a state code), else the state of its GSTIN.
    pos = _text(buyer, "Pos") or _text(buyer, "Gstin")[:2]
    return Reading(
        format=FORMAT, kind=KINDS[typ], number=_text(doc, "No") or None,
        issued_on=_iso(doc.get("Dt")),
        sender=PartyIds(gstin=_text(seller, "Gstin").upper() or None,
                        name=_text(seller, "LglNm") or _text(seller, "TrdNm") or None),
        po_number=po, currency="INR", lines=lines, totals=totals, cites=cites, payable=payable,
        buyer_gstin=_text(buyer, "Gstin").upper() or None,
        place_of_supply=pos.zfill(2) if pos.isdigit() else None,
    )
