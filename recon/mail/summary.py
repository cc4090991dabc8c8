"""The finance head's nightly summary, HTML with a plain-text alternative, from Postgres.

It is rendered twice on purpose: when step 10 queues it (so the row holds a complete summary
from the start) and again by the sender as it leaves, so the delivery status of the debit notes
it reports is the status at sending time, not at queueing time. What was sent is stored back on
the row in the transaction that marks it sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

import asyncpg

from recon.domain.keys import invoice_label, night_of
from recon.domain.models import RunSummary
from recon.domain.wording import count
from recon.mail.documents import Document, claim_number, templates
from recon.mail.report import Delivery, delivery
from recon.store.bounces import run_handovers
from recon.store.comparisons import over_deliveries
from recon.store.credit_notes import credit_notes_of_night, debit_note_keys
from recon.store.held_lines import carried_into, held_by
from recon.store.mail_deliveries import summary_parked, summary_suppliers
from recon.store.model_bill import model_bill
from recon.store.run_facts import run_facts


@dataclass(frozen=True)
class SummaryData:
    workflow_id: str
    business_date: str
    warehouse: str
    facts: RunSummary
    suppliers: list[dict]
    parked: list[dict]  # each with `invoice`: the supplier's number and the supplier
    handovers: list[asyncpg.Record]
    notes: Delivery
    withdrawals: Delivery
    model_bill: str = ""
    credit_notes: list[dict] = field(default_factory=list)  # suppliers' credit notes of the night
    held: list[dict] = field(default_factory=list)  # lines held awaiting receipt (not claimed)
    carried: int = 0  # lines carried in from earlier nights' holds
    over_delivered: list[dict] = field(default_factory=list)  # billed beyond the order, goods came
    carried_claimed: int = 0  # of those, claimed by this night (the others are held again)

    @property
    def carried_line(self) -> str:
        """What the night did with earlier nights' holds; a night with no new invoices says so
        first, since that is what a person wonders about such a night."""
        if not self.carried and self.facts.invoices:
            return ""
        held_again = self.carried - self.carried_claimed
        words = [f"{count(self.carried_claimed, 'held line')} claimed"]
        if held_again:
            words.append(f"{count(held_again, 'held line')} still awaiting receipt")
        lead = "No new invoices; " if not self.facts.invoices else "Carried from earlier nights: "
        return lead + ", ".join(words)


async def load_summary(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> SummaryData:
    business_date, warehouse = night_of(workflow_id) or ("", "")
    suppliers = [
        dict(r, claim=claim_number(r["note_key"]) if r["note_key"] else None)
        for r in await summary_suppliers(conn, workflow_id)
    ]
    parked = [dict(r, invoice=invoice_label(r["invoice_no"], r["supplier_id"]))
              for r in await summary_parked(conn, workflow_id)]
    return SummaryData(
        workflow_id=workflow_id, business_date=business_date, warehouse=warehouse,
        facts=await run_facts(conn, workflow_id), suppliers=suppliers, parked=parked,
        handovers=list(await run_handovers(conn, workflow_id)),
        notes=await delivery(conn, workflow_id, "debit-note"),
        withdrawals=await delivery(conn, workflow_id, "withdrawal"),
        model_bill=(await model_bill(conn, workflow_id)).line(),
        credit_notes=await _credit_notes(conn, business_date, warehouse),
        # a held bill is named with its own date: it may be claimed nights after it came in
        held=[dict(h, invoice=invoice_label(h["invoice_no"], h["supplier_id"])
                   + (f" of {h['issued_on']:%d %b %Y}" if h["issued_on"] else ""))
              for h in await held_by(conn, workflow_id)],
        over_delivered=[dict(r, invoice=invoice_label(r["invoice_no"], r["supplier_id"]))
                        for r in await over_deliveries(conn, workflow_id)],
        **dict(zip(("carried", "carried_claimed"), await carried_into(conn, workflow_id),
                   strict=True)),
    )


async def _credit_notes(conn: asyncpg.Connection | asyncpg.Pool, business_date: str,
                        warehouse: str) -> list[dict]:
    """The night's credit notes, each with the debit notes of ours it answers (a cited number
    that is the claim number of a debit note we sent that supplier) and what else it cites."""
    if not business_date:
        return []
    rows = await credit_notes_of_night(conn, date.fromisoformat(business_date), warehouse)
    if not rows:
        return []
    claims: dict[str, set[str]] = {}
    for r in await debit_note_keys(conn, sorted({r["supplier_id"] for r in rows})):
        claims.setdefault(r["supplier_id"], set()).add(claim_number(r["key"]))
    notes = []
    for r in rows:
        answers, other = settled_claims(r["cites"], claims.get(r["supplier_id"], set()))
        notes.append(dict(r, answers=answers, other=other))
    return notes


_CLAIM_TOKEN = re.compile(r"DN-[A-Z0-9]+(?:-[A-Z0-9]+)*")


def settled_claims(cites: list[str], ours: set[str]) -> tuple[list[str], list[str]]:
    """(our claim numbers the cited references quote, the references that quote none). A
    reference quotes a claim when it holds its number as a whole word, in any case, alone or in
    words ("against your debit note dn-20261013-ldh-s042"): whichever field of its standard the
    supplier put it in (GST `PrecDocDtls.InvNo` / `OthRefNo`, UBL `BillingReference`, CII
    `InvoiceReferencedDocument`...), the reader gathered it into `cites`."""
    by_upper = {c.upper(): c for c in ours}
    answers: list[str] = []
    other: list[str] = []
    for cite in cites:
        found = [by_upper[t] for t in _CLAIM_TOKEN.findall(cite.upper()) if t in by_upper]
        answers += [c for c in found if c not in answers]
        if not found:
            other.append(cite)
    return answers, other


def render_summary(data: SummaryData) -> Document:
    env = templates()
    context = {"d": data, "f": data.facts}
    when = f"{data.business_date} at {data.warehouse.upper()}" if data.business_date \
        else data.workflow_id
    return Document(
        subject=f"Reconciliation summary {when}: {count(data.facts.debit_notes, 'debit note')}",
        text=env.get_template("summary.txt.j2").render(context),
        html=env.get_template("summary.html.j2").render(context),
    )


async def summary_document(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> Document:
    return render_summary(await load_summary(conn, workflow_id))
