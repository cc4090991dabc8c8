"""Step 1: read the night's invoice documents from the source into the run's working set.

The working set is fixed once: a retry or a reset finds it there and reads nothing again, so
`invoice_reads` holds exactly one row per document per run.
"""

from __future__ import annotations

from datetime import date

from temporalio import activity

from activities import resources
from activities.step import business_step
from recon.models import Count, StepInput
from recon.store.statistics import refresh_statistics

_COPY = """
WITH fresh AS (
    INSERT INTO run_invoices (workflow_id, invoice_no, seq, supplier_id, document)
    SELECT $1, invoice_no, row_number() OVER (ORDER BY invoice_no), supplier_id, document
    FROM invoices WHERE business_date = $2 AND warehouse = $3
    RETURNING invoice_no
)
INSERT INTO invoice_reads (workflow_id, invoice_no) SELECT $1, invoice_no FROM fresh
"""


@activity.defn(name="fetch_invoices")
@business_step
async def fetch_invoices(step: StepInput) -> Count:
    async with resources.pool().acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", step.workflow_id)
        have = await conn.fetchval(
            "SELECT count(*) FROM run_invoices WHERE workflow_id = $1", step.workflow_id
        )
        if not have:
            await conn.execute(
                _COPY, step.workflow_id, date.fromisoformat(step.business_date), step.warehouse
            )
            have = await conn.fetchval(
                "SELECT count(*) FROM run_invoices WHERE workflow_id = $1", step.workflow_id
            )
    # The extraction reads this table by seq range, once per batch: plan on the night's rows.
    await refresh_statistics(resources.pool(), "run_invoices")
    activity.logger.info("fetched %s invoices for %s", have, step.workflow_id)
    return Count(count=int(have))
