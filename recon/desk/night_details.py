"""The *a night* page's details beyond its figures (docs/desk.md): each step in words with the
tries Postgres keeps of it, the ledger entries with their state in the outside ledger, held lines,
the night's mail with its delivery state, the summary, the model bill and the decisions taken.

What a step left on record is read from Postgres, never from Temporal's history (the browser
never talks to Temporal): a step "tried" more than once is one whose retries Postgres counts —
the model book's attempts (step 2), the outside ledger's posting tries (step 7), the mail's
delivery tries (step 9), and a step's tries before it handed the night to a person.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import asyncpg

from recon.domain.steps import TABLE, Step
from recon.domain.wording import count
from recon.store import desk_night as store
from recon.store.model_bill import model_bill


@dataclass(frozen=True)
class StepLine:
    number: int
    title: str
    record: str  # what the step left in Postgres, in words ("" when nothing)
    attempts: str  # the tries Postgres counts, in words ("" when it keeps none)


def _record(step: Step, r: asyncpg.Record) -> str:
    words = {
        "fetch_invoices": count(r["invoices"], "invoice") + " read" if r["invoices"] else "",
        "extract_lines": (f"{count(r['extracted'], 'invoice')} extracted from "
                          f"{count(r['model_requests'], 'reading', 'readings')}"
                          if r["model_requests"] else ""),
        "match_orders": (f"{count(r['lines_matched'], 'line')} matched to orders"
                         if r["lines_matched"] is not None else ""),
        "read_stock": "stock read" if r["lines_matched"] is not None and r["compared"] else "",
        "compare_quantities": count(r["compared"], "line") + " compared" if r["compared"] else "",
        "flag_mismatches": (count(r["mismatches"], "mismatch", "mismatches") + " flagged"
                            if r["compared"] else ""),
        "post_adjustments": (count(r["ledger_rows"], "ledger entry", "ledger entries")
                             + " posted" if r["ledger_rows"] else ""),
        "update_stock": (count(r["stock_rows"], "stock movement") if r["stock_rows"] else ""),
        "gate_before_debit_notes": ("" if r["gate_passed"] is None else
                                    "passed" if r["gate_passed"] else "held for a person"),
        "send_debit_notes": count(r["notes"], "note") + " queued" if r["notes"] else "",
        "send_summary": "summary queued" if r["summaries"] else "",
    }
    return words.get(step.name, "")


def _attempts(step: Step, r: asyncpg.Record, handed: dict[str, int]) -> str:
    parts = []
    if step.name == "extract_lines" and r["model_requests"]:
        tries = max(1, r["model_attempts"])
        parts.append(f"{count(tries, 'attempt')} by the model book"
                     + (f", {r['model_unanswered']} readings not answered"
                        if r["model_unanswered"] else ""))
    if step.name == "post_adjustments" and r["posting_attempts"]:
        parts.append(f"up to {count(r['posting_attempts'], 'try', 'tries')} per entry in the "
                     "outside ledger")
    if step.name == "send_debit_notes" and r["note_attempts"]:
        parts.append(f"up to {count(r['note_attempts'], 'delivery try', 'delivery tries')} "
                     "per note")
    if step.name in handed:  # a check (the gate) hands over without retrying: no attempts
        tries = handed[step.name]
        parts.append("handed to a person" + (f" after {count(tries, 'attempt')}" if tries else ""))
    return "; ".join(parts)


def steps(row: asyncpg.Record) -> list[StepLine]:
    raw = row["handed_over"]
    handed = {k: int(v) for k, v in (json.loads(raw) if isinstance(raw, str) else raw).items()}
    return [StepLine(s.number, s.title, _record(s, row), _attempts(s, row, handed))
            for s in TABLE]


def delivery(mail: asyncpg.Record) -> str:
    """A message's delivery state in words."""
    if mail["sent_at"] is not None:
        return f"delivered {mail['sent_at']:%Y-%m-%d %H:%M}"
    if mail["failed_at"] is not None:
        return f"refused by the mail server: {mail['last_error'] or 'no reason given'}"
    if mail["attempts"]:
        return (f"not delivered yet after {count(mail['attempts'], 'try', 'tries')}"
                f" ({mail['last_error'] or 'no answer'}); next try {mail['next_attempt_at']:%H:%M}")
    return "waiting to be sent"


async def details(pool: asyncpg.Pool, workflow_id: str) -> dict:
    """Everything the night page shows below its figures."""
    mail = await store.mail_of(pool, workflow_id)
    summary = next((m for m in mail if m["kind"] == "summary"), None)
    return {
        "steps": steps(await store.steps_of(pool, workflow_id)),
        "entries": await store.ledger_of(pool, workflow_id),
        "held": await store.held_of(pool, workflow_id),
        "notes": [(m, delivery(m)) for m in mail if m["kind"] != "summary"],
        "summary": (summary, delivery(summary)) if summary else None,
        "bill": (await model_bill(pool, workflow_id)).line(),
        "signed": await store.decisions_of(pool, workflow_id),
        "undos": await store.undos_of(pool, workflow_id),
        "shown_at_most": store.SHOWN,
    }
