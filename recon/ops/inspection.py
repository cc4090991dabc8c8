"""`recon inspect`: one run's health at a glance, from Postgres (what was written) and Temporal
(where the run is, how often steps were retried). Outside checks read the JSON form."""

from __future__ import annotations

import asyncpg
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from recon.domain.errors import UnknownRun
from recon.domain.labels import RECON_STATUS, RunStatus
from recon.ops.history import read_history
from recon.store import inspection as store
from recon.store import ledger_postings as postings
from recon.store.held_lines import held_by
from recon.store.model_bill import model_bill


async def inspect_run(client: Client, pool: asyncpg.Pool, workflow_id: str) -> dict:
    counts = await store.inspection_counts(pool, workflow_id)
    # `ledger_net_paise` is the ₹ net; each currency's own, in its minor unit, beside it
    nets = await store.ledger_net_by_currency(pool, workflow_id)
    bill = await model_bill(pool, workflow_id)
    # `model_calls` counts answered rows, the local readers' too (its meaning before every request
    # had a row); `model_requests` counts what a model was asked, `read_without_model` the rest
    counts.update(model_calls=bill.answered + bill.read_without_model,
                  model_requests=bill.requests, read_without_model=bill.read_without_model,
                  model_tokens=bill.tokens, model_cost_usd=bill.cost_usd,
                  model_requests_interactive=bill.requests - bill.batch_requests,
                  model_requests_batch=bill.batch_requests, model_batches=list(bill.batch_ids))
    facts: dict = {"run": workflow_id}
    # Lines the night held awaiting receipt (billed ahead of their goods), as the JSON reads them.
    held = [
        {"invoice": h["invoice_no"], "line": h["line_no"], "supplier": h["supplier_id"],
         "po": h["po_number"], "sku": h["sku"], "billed": h["qty"], "covered": h["qty_open"],
         "held_until": h["held_until"].isoformat(), "evidence": h["evidence"]}
        for h in await held_by(pool, workflow_id)
    ]
    try:
        handle = client.get_workflow_handle(workflow_id)
        description = await handle.describe()
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        if not any(counts.values()):
            raise UnknownRun(f"no run {workflow_id!r}: check the id with `recon handovers` "
                             "or the Web UI") from None
        facts.update(status="unknown", activity_retries=None, history_events=None, steps={})
        facts.update(counts, ledger_net_by_currency=nets, held_lines=held)
        return facts
    status = description.status or WorkflowExecutionStatus.RUNNING
    business = description.typed_search_attributes.get(RECON_STATUS)
    pending_retries = sum(
        max(0, p.attempt - 1) for p in description.raw_description.pending_activities
    )
    if status == WorkflowExecutionStatus.RUNNING:
        label = "awaiting_decision" if business == RunStatus.AWAITING_DECISION else "running"
    else:
        label = status.name.lower()
    history = await read_history(handle)
    facts.update(
        status=label,
        run_id=description.run_id,
        activity_retries=history.activity_retries + pending_retries,
        restarts=sum(1 for s in history.steps.values() if s.max_attempt > 1),
        history_events=history.events,
        steps={
            name: {"activities": s.activities, "max_attempt": s.max_attempt,
                   "retries": s.retries, "completed": s.completed}
            for name, s in history.steps.items()
        },
    )
    facts.update(counts, ledger_net_by_currency=nets, held_lines=held)
    return facts


async def ledger_lines(pool: asyncpg.Pool, workflow_id: str) -> list[str]:
    """Every ledger entry of a run, one line each: reference, supplier, amount in its currency,
    state."""
    from recon.domain.money import amount

    rows = await store.ledger_references(pool, workflow_id)
    if not rows:
        raise UnknownRun(f"run {workflow_id} has no ledger entries")
    outside = await postings.states_of(pool, [r["reference"] for r in rows])
    return [
        f"{r['reference']}  {r['supplier_id']}  {amount(r['amount_paise'], r['currency'])}  "
        + ("reversal" if r["kind"] == "reversal" else "reversed" if r["reversed"] else "live")
        + _outside_words(outside.get(r["reference"]))
        for r in rows
    ]


def _outside_words(posting) -> str:
    """An entry's state in the outside ledger, when one is configured: `tryton: posted as 17`,
    `tryton: waiting`, `http: failed: <the ledger's words>`; nothing for the built-in ledger."""
    if posting is None:
        return ""
    words = f"  {posting['ledger']}: {posting['state']}"
    if posting["outside_id"] and posting["state"] in ("posted", "verified"):
        words += f" as {posting['outside_id']}"
    if posting["state"] == "failed" and posting["words"]:
        words += f": {posting['words']}"
    return words


async def outside_ledger_line(pool: asyncpg.Pool, workflow_id: str) -> str | None:
    """`recon status`'s line for the outside ledger: how many of the run's entries are there,
    waiting, or refused (with the ledger's words). None when the run posts only to the built-in
    ledger."""
    rows = await postings.states_of_run(pool, workflow_id)
    if not rows:
        return None
    ledger = rows[0]["ledger"]
    counts = ", ".join(f"{r['n']} {r['state']}" for r in rows)
    failed = next((r["words"] for r in rows if r["state"] == "failed" and r["words"]), None)
    return f"Outside ledger ({ledger}): {counts}" + (f"; refused: {failed}" if failed else "")
