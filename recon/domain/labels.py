"""How a run introduces itself in Temporal: its business status, the search attributes an
operator filters by, and its static summary and details in the Web UI. One place, so a run
started by `recon run` and one started by the nightly schedule look the same, and every reader
(`recon status`, `recon inspect`, `recon run --wait`) compares against the same values.

Pure (no I/O, no clock): workflow code uses it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

from recon.domain.settings_table import default_of


class RunStatus(StrEnum):
    """The business status (search attribute ReconStatus, `Progress.status`, `RunSummary.status`).
    The values are stored in kept histories and visibility records: never change one."""

    RUNNING = "Running"
    AWAITING_DECISION = "AwaitingDecision"
    UNDOING = "Undoing"
    UNDONE = "Undone"
    COMPLETED = "Completed"
    REFUSED = "Refused"  # an undo or redo whose signed request was refused: nothing was done


RECON_STATUS = SearchAttributeKey.for_keyword("ReconStatus")
RECON_STEP = SearchAttributeKey.for_keyword("ReconStep")
RECON_WAREHOUSE = SearchAttributeKey.for_keyword("ReconWarehouse")
RECON_DATE = SearchAttributeKey.for_keyword("ReconDate")
# Registered on the namespace by `recon dev` (recon/runtime/embedded.py) and deploy/temporal-namespace.sh.
RUN_SEARCH_ATTRIBUTES = (RECON_STATUS, RECON_STEP, RECON_WAREHOUSE, RECON_DATE)


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
            f"runs waiting for a person: `ReconStatus=\"{RunStatus.AWAITING_DECISION}\"`."
        ),
        "search_attributes": TypedSearchAttributes([
            SearchAttributePair(RECON_WAREHOUSE, warehouse),
            SearchAttributePair(RECON_DATE, business_date),
        ]),
    }


def undo_start_options(run_workflow_id: str, scope: str, by: str, reason: str,
                       namespace: str = default_of("TEMPORAL_NAMESPACE"),
                       warehouse: str | None = None, business_date: str | None = None,
                       ) -> dict[str, Any]:
    """An undo names the run it compensates and links to its page in the Web UI. It carries
    the night's ReconWarehouse and ReconDate when known: a night that has closed can never
    change its own row in the Web UI's list, so its undo (ReconStatus `Undone`) is listed beside
    it under the same filter (docs/schedules.md)."""
    options: dict[str, Any] = {
        "static_summary": f"Undo of {run_workflow_id} ({scope})",
        "static_details": (
            f"Compensates [{run_workflow_id}](/namespaces/{namespace}/workflows/{run_workflow_id}) "
            f"({scope}). Decided by {by}: {reason[:300]}"
        ),
    }
    if warehouse and business_date:
        options["search_attributes"] = TypedSearchAttributes([
            SearchAttributePair(RECON_WAREHOUSE, warehouse),
            SearchAttributePair(RECON_DATE, business_date),
        ])
    return options
