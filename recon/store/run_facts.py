"""What the database says about one run: the numbers the summary and `recon inspect` report.

Posted counts are *live* counts (entries no reversal points at): an undone night reports zero,
a redone night reports the night once, never the sum of every generation. Sums are per currency
(each in its own minor unit): `adjustment_total_paise` is the ₹ one.
"""

from __future__ import annotations

import json

import asyncpg

from recon.domain.labels import RunStatus
from recon.domain.models import RunSummary
from recon.domain.money import BASE_CURRENCY

_FACTS = """
SELECT
  (SELECT count(*) FROM run_invoices WHERE workflow_id = $1) AS invoices,
  (SELECT count(*) FROM parked_items WHERE workflow_id = $1) AS parked,
  (SELECT count(*) FROM mismatches WHERE workflow_id = $1) AS mismatches,
  (SELECT count(*) FROM live_ledger_entries WHERE workflow_id = $1) AS ledger_posted,
  (SELECT coalesce(jsonb_object_agg(currency, total), '{}')::text FROM (
      SELECT currency, sum(amount_paise) AS total FROM live_ledger_entries
      WHERE workflow_id = $1 GROUP BY currency) t) AS totals,
  (SELECT count(*) FROM live_stock_movements WHERE workflow_id = $1) AS stock_movements,
  (SELECT count(*) FROM live_debit_notes WHERE workflow_id = $1) AS debit_notes
"""


async def run_facts(conn: asyncpg.Pool | asyncpg.Connection, workflow_id: str) -> RunSummary:
    row = await conn.fetchrow(_FACTS, workflow_id)
    totals = {currency: int(total) for currency, total in json.loads(row["totals"]).items()}
    return RunSummary(
        workflow_id=workflow_id,
        status=RunStatus.RUNNING.value,
        invoices=row["invoices"],
        parked=row["parked"],
        mismatches=row["mismatches"],
        ledger_posted=row["ledger_posted"],
        adjustment_total_paise=totals.get(BASE_CURRENCY, 0),
        adjustment_totals=totals,
        stock_movements=row["stock_movements"],
        debit_notes=row["debit_notes"],
    )
