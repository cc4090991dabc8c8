"""The finance head's nightly summary, HTML with a plain-text alternative, from Postgres.

It is rendered twice on purpose: when step 10 queues it (so the row holds a complete summary
from the start) and again by the sender as it leaves, so the delivery status of the debit notes
it reports is the status at sending time, not at queueing time. What was sent is stored back on
the row in the transaction that marks it sent.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from recon.mail.documents import Document, claim_number, night_of, templates
from recon.mail.report import STATE_SQL, Delivery, delivery
from recon.model_bill import model_bill
from recon.models import RunSummary
from recon.run_facts import run_facts

_SUPPLIERS = f"""
SELECT l.supplier_id, s.name, count(*) AS entries, sum(l.amount_paise)::bigint AS total,
       o.key AS note_key, o.state AS note_state
FROM ledger_entries l
JOIN suppliers s USING (supplier_id)
LEFT JOIN (SELECT key, supplier_id, {STATE_SQL} AS state FROM live_debit_notes
           WHERE workflow_id = $1) o USING (supplier_id)
WHERE l.workflow_id = $1 AND l.kind <> 'reversal'
  AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference)
GROUP BY l.supplier_id, s.name, o.key, o.state
ORDER BY l.supplier_id
"""

_HANDOVERS = """
SELECT '#' || handover_no AS ref, step AS what, error_type || ': ' || left(error_message, 300)
       AS why, decision, decided_by, decision_note, created_at
FROM handovers WHERE workflow_id = $1
UNION ALL
SELECT 'mail ' || id, 'deliver ' || outbox_key, left(reply, 300), decision, decided_by,
       decision_note, created_at
FROM mail_handovers WHERE workflow_id = $1
ORDER BY created_at
"""


@dataclass(frozen=True)
class SummaryData:
    workflow_id: str
    business_date: str
    warehouse: str
    facts: RunSummary
    suppliers: list[dict]
    parked: list[asyncpg.Record]
    handovers: list[asyncpg.Record]
    notes: Delivery
    withdrawals: Delivery
    model_bill: str = ""


async def load_summary(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> SummaryData:
    business_date, warehouse = night_of(workflow_id) or ("", "")
    suppliers = [
        dict(r, claim=claim_number(r["note_key"]) if r["note_key"] else None)
        for r in await conn.fetch(_SUPPLIERS, workflow_id)
    ]
    parked = await conn.fetch(
        "SELECT invoice_no, line_no, step, reason FROM parked_items WHERE workflow_id = $1"
        " ORDER BY invoice_no, line_no NULLS FIRST", workflow_id)
    return SummaryData(
        workflow_id=workflow_id, business_date=business_date, warehouse=warehouse,
        facts=await run_facts(conn, workflow_id), suppliers=suppliers, parked=list(parked),
        handovers=list(await conn.fetch(_HANDOVERS, workflow_id)),
        notes=await delivery(conn, workflow_id, "debit-note"),
        withdrawals=await delivery(conn, workflow_id, "withdrawal"),
        model_bill=(await model_bill(conn, workflow_id)).line(),
    )


def render_summary(data: SummaryData) -> Document:
    env = templates()
    context = {"d": data, "f": data.facts}
    when = f"{data.business_date} at {data.warehouse.upper()}" if data.business_date \
        else data.workflow_id
    return Document(
        subject=f"Reconciliation summary {when}: {data.facts.debit_notes} debit notes",
        text=env.get_template("summary.txt.j2").render(context),
        html=env.get_template("summary.html.j2").render(context),
    )


async def summary_document(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> Document:
    return render_summary(await load_summary(conn, workflow_id))
