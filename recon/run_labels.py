"""How a night's run introduces itself in the Web UI: its static summary and details, and the
search attributes an operator filters by. One place, so a run started by `recon run` and one
started by the nightly schedule look the same.
"""

from __future__ import annotations

from typing import Any

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

RECON_STATUS = SearchAttributeKey.for_keyword("ReconStatus")
RECON_STEP = SearchAttributeKey.for_keyword("ReconStep")
RECON_WAREHOUSE = SearchAttributeKey.for_keyword("ReconWarehouse")
RECON_DATE = SearchAttributeKey.for_keyword("ReconDate")


def night_start_options(
    business_date: str, warehouse: str, invoices: int | None, started_by: str
) -> dict[str, Any]:
    """Keyword arguments for start_workflow / start_child_workflow of NightlyReconciliation."""
    counted = f"{invoices:,}" if invoices is not None else "not counted yet"
    return {
        "static_summary": f"Reconcile {warehouse} · {business_date}",
        "static_details": (
            f"**Warehouse** {warehouse} · **Business date** {business_date} · "
            f"**Invoices** {counted}\n\n"
            f"Started by {started_by}. Current step and progress: *Current details* below; "
            "runs waiting for a person: `ReconStatus=\"AwaitingDecision\"`."
        ),
        "search_attributes": TypedSearchAttributes([
            SearchAttributePair(RECON_WAREHOUSE, warehouse),
            SearchAttributePair(RECON_DATE, business_date),
        ]),
    }


def undo_start_options(run_workflow_id: str, scope: str, by: str, reason: str,
                       namespace: str = "default") -> dict[str, Any]:
    """An undo names the run it compensates and links to its page in the Web UI."""
    return {
        "static_summary": f"Undo of {run_workflow_id} ({scope})",
        "static_details": (
            f"Compensates [{run_workflow_id}](/namespaces/{namespace}/workflows/{run_workflow_id}) "
            f"({scope}). Decided by {by}: {reason[:300]}"
        ),
    }
