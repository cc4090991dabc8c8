"""The documents people read: debit notes and withdrawals (to suppliers), rendered with Jinja2.

A document names itself: a claim number a supplier can quote, the night, the invoices and lines,
amounts in the supplier's currency (₹ in Indian grouping, € as €8.00: `money.amount`). If the
mail system ever delivers one twice, the reader sees the same claim number twice.
Supplier-facing documents carry no run ids and no names of the people who decided; the claim
number is the reference. A withdrawal cites the note it withdraws.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from functools import lru_cache
from pathlib import Path

import asyncpg
import jinja2
import markupsafe

from recon.domain.keys import number_of
from recon.domain.money import BASE_CURRENCY, amount, amounts, rupees
from recon.domain.printable import neutral
from recon.store.mail_deliveries import debit_note_history, debit_note_lines

_RUN = re.compile(r"recon-(\d{4})-(\d{2})-(\d{2})-([a-z0-9_-]+)")
_NOTE = re.compile(_RUN.pattern + r":debit-note:([^:]+)(.*)")


@dataclass(frozen=True)
class Document:
    subject: str
    text: str
    html: str | None = None


@dataclass(frozen=True)
class NoteLine:
    invoice_no: str
    line_no: int
    kind: str
    sku: str
    invoiced_qty: int
    received_qty: int
    invoice_price_paise: int | Decimal  # a price may hold a fraction of a paisa (1000.4)
    po_price_paise: int | Decimal
    amount_paise: int
    # The facts a supplier checks the claim by (None on lines weighed before they were kept).
    po_number: str | None = None
    invoice_date: str | None = None
    received_to_date: int | None = None
    billed_before: int | None = None
    beyond_order: int | None = None
    receipts: list[str] = field(default_factory=list)  # "GRN-17 of 13 Oct 2026: 24"
    earlier_bills: list[str] = field(default_factory=list)  # "INV-7001 of 12 Oct 2026: 24"
    repeats: str | None = None  # the earlier bill this one repeats, as the supplier numbers it
    # Tax (docs/books.md "Tax"): the claim's taxable value and each tax part, None without tax.
    hsn: str | None = None
    tax_rate: str | None = None  # the invoice line's rate, "18"
    expected_tax_rate: str | None = None  # the PO line's rate, on a `tax` claim
    taxable_paise: int | None = None
    cgst_paise: int | None = None
    sgst_paise: int | None = None
    igst_paise: int | None = None
    cess_paise: int | None = None
    vat_paise: int | None = None

    @property
    def claimed_rate(self) -> str:
        """The rate the claim's tax is at: the line's rate, or on a `tax` claim the difference
        between the billed rate and the PO line's."""
        rate = Decimal(self.tax_rate or "0")
        if self.kind == "tax":
            rate -= Decimal(self.expected_tax_rate or "0")
        return format(rate.normalize(), "f")

    @property
    def half_rate(self) -> str:
        """CGST's (and SGST's) rate: half the claimed rate."""
        return format((Decimal(self.claimed_rate) / 2).normalize(), "f")


@dataclass(frozen=True)
class DebitNote:
    key: str
    supplier_id: str
    supplier_name: str
    email: str
    business_date: str
    warehouse: str
    total_paise: int
    lines: list[NoteLine] = field(default_factory=list)
    supplier_gstin: str | None = None
    own_gstin: str | None = None
    currency: str = BASE_CURRENCY  # the supplier's: every amount of the note is in it

    def part_total(self, part: str) -> int | None:
        """A part summed over the note's lines (None: no line has it)."""
        values = [getattr(line, part) for line in self.lines if getattr(line, part) is not None]
        return sum(values) if values else None

    @property
    def taxed(self) -> bool:
        return any(line.taxable_paise is not None for line in self.lines)

    @property
    def under_gst(self) -> bool:
        """A GST debit note only when the claim carries GST (CGST, SGST or IGST): a supplier who
        charged VAT (no GSTIN on either side, kept whole in `vat_paise`) gets a note with its
        tax, not one that cites the CGST Act."""
        return any(self.part_total(p) is not None for p in ("cgst_paise", "sgst_paise", "igst_paise"))


PLAIN_TEXT_SUFFIX = ".txt.j2"

# What a supplier reads as the reason of a withdrawal: never the undo's internal `--reason`
# (a person's note to colleagues: "supplier is a crook", a ticket number), which stays on record
# in the undo's history and `recon status`.
SUPPLIER_REASON_WHOLE = ("we reviewed this claim against our goods receipts and purchase "
                         "orders and withdraw it")
SUPPLIER_REASON_PART = ("we reviewed some lines of this claim against our goods receipts and "
                        "purchase orders and withdraw them")


def escapes(template_name: str | None) -> bool:
    return not (template_name or "").endswith(PLAIN_TEXT_SUFFIX)


def _neutral_value(value: object) -> object:
    if isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(neutral(str(value)))
    if isinstance(value, str):
        return neutral(value)
    return value


@lru_cache(maxsize=1)
def templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        # Every template is HTML-escaped unless it is declared plain text by its name: supplier
        # text (a PO reference, a reason) must never become markup in a reader's mail client.
        # (`select_autoescape(["html"])` matches only names ending in ".html", not "x.html.j2".)
        autoescape=escapes,
        # data is text, never terminal or bidi control: ESC, U+202E and the like are shown as
        # escapes in every value a template prints, text and HTML alike (docs/mail.md)
        finalize=_neutral_value,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["rupees"] = rupees
    # an amount in the document's own currency (`currency` in the template's context: ₹ unless a
    # supplier bills in another), or in the currency named: `x|money("EUR")`
    env.filters["money"] = jinja2.pass_context(
        lambda context, minor, currency=None: amount(
            minor, currency or context.get("currency") or BASE_CURRENCY))
    env.filters["amounts"] = amounts  # sums per currency, side by side: "₹2,425, €78.33"
    env.filters["units"] = lambda n: f"{n:,} unit" + ("" if n == 1 else "s")
    env.filters["day"] = lambda iso: date.fromisoformat(str(iso)).strftime("%d %b %Y")
    return env


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:4].upper()


def claim_number(note_key: str) -> str:
    """`recon-2026-10-13-ldh:debit-note:S042` -> `DN-20261013-LDH-S042`: what a supplier quotes.
    Any other key shape (a later generation, say) gets a short hash so two claims never share
    a number."""
    m = _NOTE.fullmatch(note_key)
    if not m:
        return f"DN-{hashlib.sha256(note_key.encode()).hexdigest()[:10].upper()}"
    y, mo, d, warehouse, supplier, rest = m.groups()
    number = f"DN-{y}{mo}{d}-{warehouse.upper()}-{supplier}"
    return f"{number}-{_short_hash(rest)}" if rest else number


def withdrawal_number(withdrawal_key: str, note_key: str) -> str:
    """`WD-` + the claim it withdraws; a partial withdrawal adds a short hash of its own key."""
    base = "WD-" + claim_number(note_key).removeprefix("DN-")
    whole = withdrawal_key in (f"undo:{note_key}",)
    return base if whole else f"{base}-{_short_hash(withdrawal_key)}"


async def load_debit_notes(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str,
                           business_date: str, warehouse: str,
                           supplier_id: str | None = None,
                           own_gstin: str | None = None) -> list[DebitNote]:
    """One note per supplier who billed more, in total, than the goods and prices support
    (invoices a person parked are left out; `supplier_id` limits it to one supplier)."""
    from recon.domain.keys import debit_note_key

    by_supplier: dict[str, list[asyncpg.Record]] = {}
    rows_of_night = await debit_note_lines(conn, workflow_id, supplier_id)
    for r in rows_of_night:
        by_supplier.setdefault(r["supplier_id"], []).append(r)
    receipts, bills = await _history(conn, workflow_id, business_date, warehouse, rows_of_night)
    notes = []
    for supplier_id, rows in by_supplier.items():
        total = sum(int(r["amount_paise"]) for r in rows)
        if total <= 0:
            continue
        notes.append(DebitNote(
            key=debit_note_key(workflow_id, supplier_id), supplier_id=supplier_id,
            supplier_name=rows[0]["name"], email=rows[0]["email"], business_date=business_date,
            warehouse=warehouse, total_paise=total, currency=rows[0]["currency"],
            supplier_gstin=rows[0]["gstin"], own_gstin=own_gstin,
            lines=[NoteLine(
                # the supplier reads its own number, never our reference (`S001:INV-7001`)
                invoice_no=number_of(r["invoice_no"], supplier_id), line_no=r["line_no"],
                kind=r["kind"], sku=r["sku"],
                invoiced_qty=r["invoiced_qty"], received_qty=r["received_qty"],
                invoice_price_paise=_price(r["invoice_price_paise"]),
                po_price_paise=_price(r["po_price_paise"]),
                amount_paise=int(r["amount_paise"]), po_number=r["po_number"],
                invoice_date=_day(r["invoice_date"]), received_to_date=r["received_to_date"],
                billed_before=r["prior_accepted"], beyond_order=r["beyond_order"],
                receipts=receipts.get((r["po_number"], r["sku"]), []),
                earlier_bills=bills.get((r["po_number"], r["sku"]), []),
                repeats=number_of(r["repeats"], supplier_id) if r["repeats"] else None,
                hsn=r["hsn"], tax_rate=r["tax_rate"], expected_tax_rate=r["expected_tax_rate"],
                taxable_paise=r["taxable_paise"], cgst_paise=r["cgst_paise"],
                sgst_paise=r["sgst_paise"], igst_paise=r["igst_paise"],
                cess_paise=r["cess_paise"], vat_paise=r["vat_paise"],
            ) for r in rows],
        ))
    return notes


def _price(paise: Decimal) -> int | Decimal:
    """Whole paise as an int, as every price was before prices kept their decimals."""
    return int(paise) if paise == paise.to_integral_value() else paise


def _day(value: object) -> str | None:
    return value.strftime("%d %b %Y") if isinstance(value, date) else None


async def _history(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str, business_date: str,
                   warehouse: str, rows: list[asyncpg.Record]
                   ) -> tuple[dict[tuple, list[str]], dict[tuple, list[str]]]:
    """Per (PO, SKU): the receipts to date and the earlier bills, as a supplier reads them."""
    po_lines = sorted({(r["po_number"], r["sku"]) for r in rows if r["po_number"]})
    if not po_lines or not business_date:
        return {}, {}
    receipt_rows, bill_rows = await debit_note_history(
        conn, workflow_id, warehouse, date.fromisoformat(business_date), po_lines)
    receipts: dict[tuple, list[str]] = {}
    for g in receipt_rows:
        receipts.setdefault((g["po_number"], g["sku"]), []).append(
            f"{g['receipt']} of {_day(g['received_on'])}: {g['qty_received']:,}")
    bills: dict[tuple, list[str]] = {}
    for b in bill_rows:
        bills.setdefault((b["po_number"], b["sku"]), []).append(
            f"{number_of(b['invoice_no'], b['supplier_id'])} of {_day(b['invoice_date'])}: "
            f"{b['qty_accepted']:,}")
    return receipts, bills


def render_debit_note(note: DebitNote, sender_name: str = "Accounts Payable") -> Document:
    number = claim_number(note.key)
    text = templates().get_template("debit_note.txt.j2").render(
        note=note, number=number, sender_name=sender_name, currency=note.currency,
        invoices=sorted({line.invoice_no for line in note.lines}),
    )
    subject = f"Debit note {number}: {amount(note.total_paise, note.currency)} ({note.supplier_name})"
    return Document(subject=subject, text=text)


def render_withdrawal(*, withdrawal_key: str, note_key: str, supplier_name: str,
                      note_total_paise: int, withdrawn_paise: int,
                      note_was_sent: bool, sender_name: str = "Accounts Payable",
                      currency: str = BASE_CURRENCY) -> Document:
    """The supplier reads a supplier-facing reason (SUPPLIER_REASON_*), never the undo's note;
    amounts in the note's currency (the supplier's)."""
    number = withdrawal_number(withdrawal_key, note_key)
    claim = claim_number(note_key)
    text = templates().get_template("withdrawal.txt.j2").render(
        number=number, claim=claim, supplier_name=supplier_name,
        note_total_paise=note_total_paise, withdrawn_paise=withdrawn_paise,
        whole=withdrawn_paise == note_total_paise, note_was_sent=note_was_sent,
        reason=SUPPLIER_REASON_WHOLE if withdrawn_paise == note_total_paise
        else SUPPLIER_REASON_PART,
        sender_name=sender_name, currency=currency,
    )
    subject = f"Withdrawal {number} of debit note {claim}: {amount(withdrawn_paise, currency)}"
    return Document(subject=subject, text=text)
