"""What the database says about one run: the numbers the summary and `recon inspect` report.

Posted counts are *live* counts (entries no reversal points at): an undone night reports zero,
a redone night reports the night once, never the sum of every generation.
"""

from __future__ import annotations

import asyncpg

from recon.domain.labels import RunStatus
from recon.domain.models import RunSummary

_FACTS = """
SELECT
  (SELECT count(*) FROM run_invoices WHERE workflow_id = $1) AS invoices,
  (SELECT count(*) FROM parked_items WHERE workflow_id = $1) AS parked,
  (SELECT count(*) FROM mismatches WHERE workflow_id = $1) AS mismatches,
  (SELECT count(*) FROM live_ledger_entries WHERE workflow_id = $1) AS ledger_posted,
  (SELECT coalesce(sum(amount_paise), 0) FROM live_ledger_entries WHERE workflow_id = $1)
      AS adjustment_total,
  (SELECT count(*) FROM live_stock_movements WHERE workflow_id = $1) AS stock_movements,
  (SELECT count(*) FROM live_debit_notes WHERE workflow_id = $1) AS debit_notes
"""


async def run_facts(conn: asyncpg.Pool | asyncpg.Connection, workflow_id: str) -> RunSummary:
    row = await conn.fetchrow(_FACTS, workflow_id)
    return RunSummary(
        workflow_id=workflow_id,
        status=RunStatus.RUNNING.value,
        invoices=row["invoices"],
        parked=row["parked"],
        mismatches=row["mismatches"],
        ledger_posted=row["ledger_posted"],
        adjustment_total_paise=int(row["adjustment_total"]),
        stock_movements=row["stock_movements"],
        debit_notes=row["debit_notes"],
    )
