"""The checks every reading passes, whichever reader made it, and the one money rule.

Rules (docs/design.md "Documents in every format"):
- a document has a number and at least one line, at most `MAX_LINES`;
- quantities are whole units (the warehouse counts pieces) and positive, except on a credit
  note, where they may be negative but never zero (a quantity with decimals in a unit the facts
  divide, 2.5 KGM, is stored as the whole finer unit, 2500 GRM); an invoice line billing a
  negative amount is a return and belongs on a credit note;
- the lines' net amounts sum to the stated line total, and each total the format defines equals
  what the format says it is made of, within the format's rounding (`Total.tolerance`);
- where the format binds a line's amount to its price (Peppol's R120, the IRP's TotAmt), the
  reader adds that as a `Total` too, line allowances and charges already folded in;
- the unit price the run compares with the purchase order is kept exactly (`exact_price`): the
  price the line states (per unit, its BaseQuantity applied) when the line's net amount is its
  quantity times that price rounded once to the paisa (half up), as the standards bind them;
  otherwise (a line allowance or charge moved the net) the net amount over the quantity (what
  the supplier really bills per unit). It travels in paise with every decimal
  (`ExtractedLine.price_exact`) beside the price half up to the paisa (`unit_price_paise`);
  steps 5-6 compare the exact one and round each amount once (docs/books.md);
- document-level allowances and charges are checked into the totals but not spread over the
  lines; the unit a line states travels with it (step 3 converts it to the PO's unit).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from pydantic import ValidationError

from recon.documents.extraction.schema import MAX_LINES, ExtractedInvoice, ExtractedLine
from recon.documents.formats.reading import CREDIT_NOTE, Reading, ReadingLine
from recon.domain import units
from recon.domain.errors import UnreadableInvoice

PAISA = Decimal("0.01")


def paise(amount: Decimal) -> int:
    """Rupees (or any two-decimal currency) to integer minor units, half up."""
    return int((amount / PAISA).quantize(Decimal("1"), rounding=ROUND_HALF_UP))


def _whole(line: ReadingLine, credit: bool) -> int:
    qty = line.quantity
    if qty != qty.to_integral_value() and units.finer(line.unit, qty) is None:
        raise UnreadableInvoice(
            f"line {line.line_no}: quantity {qty} is not a whole number of units")
    if qty == 0:
        raise UnreadableInvoice(f"line {line.line_no}: quantity 0")
    if qty < 0 and not credit:
        raise UnreadableInvoice(
            f"line {line.line_no}: quantity {qty} is negative: a return belongs on a credit note")
    return int(qty)


def check(reading: Reading) -> None:
    """Raise UnreadableInvoice with the first rule the reading breaks; return if it keeps all."""
    credit = reading.kind == CREDIT_NOTE
    if not reading.number or not reading.number.strip():
        raise UnreadableInvoice(f"{reading.format}: the document states no number")
    if len(reading.number) > 64:
        raise UnreadableInvoice(f"{reading.format}: document number longer than 64 characters")
    if not reading.lines:
        why = f" ({'; '.join(reading.notes)})" if reading.notes else ""
        raise UnreadableInvoice(f"{reading.format}: no line items found{why}")
    if len(reading.lines) > MAX_LINES:
        raise UnreadableInvoice(f"{reading.format}: more than {MAX_LINES} lines")
    seen: set[int] = set()
    for line in reading.lines:
        if line.line_no in seen:
            raise UnreadableInvoice(f"line {line.line_no} appears twice")
        seen.add(line.line_no)
        _whole(line, credit)
        if not credit and line.net_amount < 0:
            raise UnreadableInvoice(
                f"line {line.line_no}: net amount {line.net_amount} is negative: a return "
                "belongs on a credit note")
        if line.unit_price is not None and line.unit_price < 0:
            raise UnreadableInvoice(f"line {line.line_no}: negative price {line.unit_price}")
        if not line.sku:
            raise UnreadableInvoice(f"line {line.line_no} names no item (no SKU or line reference)")
    for total in reading.totals:
        if abs(total.stated - total.computed) > total.tolerance:
            allowed = f" (allowed {total.tolerance})" if total.tolerance else ""
            raise UnreadableInvoice(
                f"{reading.format}: {total.name} is {total.stated}, its parts make "
                f"{total.computed}{allowed}")


def exact_price(line: ReadingLine) -> Decimal:
    """The price per unit in paise, exactly (module docstring): the stated price when the net
    amount is quantity x price rounded once to the paisa, else the net amount over the
    quantity (to `units.PRICE_DECIMALS` decimals of the paisa if it does not terminate)."""
    qty, net = abs(line.quantity), abs(line.net_amount)
    if qty == 0:
        return Decimal(0)
    stated = line.unit_price
    if stated is not None and (qty * stated).quantize(PAISA, rounding=ROUND_HALF_UP) == net:
        return units.plain(stated.scaleb(2))
    return units.exact_decimal(Fraction(net.scaleb(2)) / Fraction(qty))


def unit_price_paise(line: ReadingLine) -> int:
    """The exact price to the paisa, half up: what evidence and totals show."""
    return int(exact_price(line).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _unit(line: ReadingLine) -> str | None:
    return line.unit.strip()[:16] or None if line.unit else None


def _stored(line: ReadingLine) -> dict:
    """The line's quantity, unit and price as step 2 stores them: the exact price beside its
    paise when it has a fraction of a paisa; a quantity with decimals (2.5 KGM) restated in the
    finer unit the facts make it whole in (2500 GRM), at the price per that unit."""
    exact, qty, unit = exact_price(line), line.quantity, _unit(line)
    if qty != qty.to_integral_value():
        unit, ratio = units.finer(line.unit, qty) or (unit, 1)
        qty, exact = qty * ratio, units.exact_decimal(Fraction(exact) / ratio)
    paise = int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return {"quantity": int(qty), "unit": unit, "unit_price_paise": paise,
            "price_exact": None if exact == paise else exact}


def as_invoice(reading: Reading, supplier_id: str) -> ExtractedInvoice:
    """A checked invoice (or supplier's debit note) in the shape step 2 stores."""
    check(reading)
    if reading.kind == CREDIT_NOTE:
        raise UnreadableInvoice("a credit note is not an invoice: it is kept apart, not reconciled")
    try:
        return ExtractedInvoice(
            invoice_no=reading.number or "", supplier_id=supplier_id,
            po_number=reading.po_number,
            lines=[ExtractedLine(line_no=ln.line_no, sku=ln.sku, description=ln.description[:200],
                                 **_stored(ln), **tax_of(reading, ln))
                   for ln in reading.lines],
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UnreadableInvoice(f"{reading.format}: {where}: {first['msg']}") from exc


def tax_split(reading: Reading, line: ReadingLine) -> str | None:
    """How the line's tax is divided (docs/books.md "Tax"): as the document divided it where it
    states the parts (an e-invoice's IGST, or CGST and SGST); otherwise by the place of supply,
    when the seller's GSTIN and the buyer's (or the stated place of supply) are both known: one
    state is CGST+SGST, two states IGST; otherwise a tax not divided by state ("vat")."""
    if line.tax_rate is None:
        return None
    if line.igst:
        return "igst"
    if line.cgst or line.sgst:
        return "cgst+sgst"
    seller = (reading.sender.gstin or "")[:2]
    buyer = reading.place_of_supply or (reading.buyer_gstin or "")[:2]
    if seller.isdigit() and buyer.isdigit():
        return "cgst+sgst" if seller == buyer else "igst"
    return "vat"


def tax_of(reading: Reading, line: ReadingLine) -> dict:
    """The line's tax facts as step 2 stores them; nothing when the document states no rate."""
    if line.tax_rate is None:
        return {}
    if line.tax_rate < 0 or line.tax_rate > 100:
        raise UnreadableInvoice(f"line {line.line_no}: tax rate {line.tax_rate}% is not a rate")

    def stated(amount: Decimal | None) -> int | None:
        return None if amount is None else paise(abs(amount))

    return {"hsn": line.hsn, "tax_category": (line.tax_category or "")[:8] or None,
            "tax_rate": Decimal(format(line.tax_rate.normalize(), "f")),
            "tax_split": tax_split(reading, line),
            "taxable_paise": paise(abs(line.net_amount)), "cgst_paise": stated(line.cgst),
            "sgst_paise": stated(line.sgst), "igst_paise": stated(line.igst),
            "cess_paise": stated(line.cess),
            # only when the document states one: a line without it stores as it always did
            **({"cess_specific_paise": stated(line.cess_specific)} if line.cess_specific else {})}


def payable_paise(reading: Reading) -> int:
    """What the document asks (or credits) in total: the payable amount when stated, otherwise
    the sum of its lines."""
    if reading.payable is not None:
        return paise(abs(reading.payable))
    return paise(abs(sum((ln.net_amount for ln in reading.lines), Decimal("0"))))
