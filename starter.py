"""Starting a night's run: the workflow id is the night's identity, so starting it twice is safe."""

from __future__ import annotations

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError

from recon.domain.keys import workflow_id_for
from recon.domain.labels import night_start_options
from recon.domain.models import RunRequest
from recon.domain.settings_table import default_of
from recon.runtime.config import Settings
from workflows.nightly import NightlyReconciliation

# Invoices per extraction activity when RECON_EXTRACT_BATCH is left at its default and no model is
# configured: one activity, one of the offline parser's transaction groups. The parser is bound by
# the worker processes' CPU, so a 500-invoice night in ten activities parses no sooner than in one,
# and every activity costs the engine ~10-20 ms of CPU (schedule, start, completion, a workflow
# task; bench/README.md, "offline extraction sized to the night"). A paid model keeps the
# setting's default: its calls in flight are counted per activity (RECON_EXTRACT_CONCURRENCY), so
# fewer activities would ask it more slowly.
OFFLINE_EXTRACT_BATCH = 1000


def extract_batch_for(settings: Settings) -> int:
    """The run's invoices per extraction activity: the setting, unless it is the default and the
    night is read by the offline parser (no model configured), which takes OFFLINE_EXTRACT_BATCH."""
    paid = bool(settings.openai_api_key or settings.openai_base_url)
    if paid or settings.extract_batch_size != default_of("RECON_EXTRACT_BATCH"):
        return settings.extract_batch_size
    return OFFLINE_EXTRACT_BATCH


def run_request(settings: Settings, business_date: str, warehouse: str) -> RunRequest:
    return RunRequest(
        business_date=business_date,
        warehouse=warehouse,
        extract_batch_size=extract_batch_for(settings),
        post_batch_size=settings.post_batch_size,
        heartbeat_seconds=settings.heartbeat_seconds,
        model_mode=settings.model_mode,
        model_batch_poll_seconds=settings.model_batch_poll_seconds,
        reminder_utc_time=settings.reminder_utc_time,
    )


async def start_night(
    client: Client, settings: Settings, business_date: str, warehouse: str,
    invoices: int | None = None, started_by: str = "recon run",
) -> WorkflowHandle:
    """Start the run, or attach to it if it is already running. A finished night is not started
    again (reject duplicate): re-running a night is a reset or an undo, decided by a person."""
    try:
        return await _start(client, settings, business_date, warehouse, invoices, started_by)
    except RPCError as exc:
        if "search attribute" in exc.message.lower():
            raise ValueError(
                f"Temporal refused the run: {exc.message}; register the search attributes "
                "ReconStatus, ReconStep, ReconWarehouse, ReconDate (Keyword) on the namespace "
                "(deploy/temporal-namespace.sh does it)") from None
        raise


async def _start(client: Client, settings: Settings, business_date: str, warehouse: str,
                 invoices: int | None, started_by: str) -> WorkflowHandle:
    return await client.start_workflow(
        NightlyReconciliation.run,
        run_request(settings, business_date, warehouse),
        id=workflow_id_for(business_date, warehouse),
        task_queue=settings.task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        **night_start_options(business_date, warehouse, invoices, started_by),
    )
