"""The reads behind `recon inspect`, `recon status` and the commands' checks: counts of what a
run wrote, its ledger references, and whether a run, a supplier, a reference or an invoice is
known. Read-only: nothing here writes.
"""

from __future__ import annotations

import asyncpg

_INSPECTION_COUNTS = """
SELECT
  (SELECT count(*) FROM ledger_entries WHERE workflow_id = $1) AS ledger_rows,
  (SELECT count(DISTINCT reference) FROM ledger_entries WHERE workflow_id = $1) AS distinct_keys,
  (SELECT count(*) FROM ledger_entries WHERE workflow_id = $1 AND reverses IS NOT NULL)
      AS reversals,
  (SELECT coalesce(sum(amount_paise), 0) FROM ledger_entries WHERE workflow_id = $1
      AND currency = 'INR') AS ledger_net_paise,
  (SELECT count(*) FROM invoice_reads WHERE workflow_id = $1) AS invoice_reads,
  (SELECT count(*) FROM run_invoices WHERE workflow_id = $1) AS invoices,
  (SELECT count(*) FROM mismatches WHERE workflow_id = $1) AS mismatches,
  (SELECT count(*) FROM stock_movements WHERE workflow_id = $1) AS stock_movements,
  (SELECT count(*) FROM outbox WHERE workflow_id = $1) AS outbox_rows,
  (SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'debit-note') AS debit_notes,
  (SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'withdrawal') AS withdrawals,
  (SELECT count(*) FROM parked_items WHERE workflow_id = $1) AS parked,
  (SELECT count(*) FROM held_lines WHERE workflow_id = $1) AS awaiting_receipt,
  (SELECT count(*) FROM invoice_fingerprints WHERE workflow_id = $1
      AND duplicate_of IS NOT NULL) AS possible_duplicates,
  (SELECT count(*) FROM handovers WHERE workflow_id = $1) AS handovers,
  (SELECT count(*) FROM handovers WHERE workflow_id = $1 AND decision IS NULL)
      AS handovers_pending
"""


async def inspection_counts(pool: asyncpg.Pool, workflow_id: str) -> dict:
    """Every row a run wrote, per table (`recon inspect`): reversed rows count too."""
    # sums are numeric in Postgres (never a bigint overflow): ints here, however large
    return {k: int(v) for k, v in (await pool.fetchrow(_INSPECTION_COUNTS, workflow_id)).items()}


# Live = not reversed: an entry, movement or note counts only while nothing points back at it.
_STATUS_COUNTS = """
SELECT
  (SELECT count(*) FROM run_invoices WHERE workflow_id = $1) AS invoices,
  (SELECT count(*) FROM mismatches WHERE workflow_id = $1) AS mismatches,
  (SELECT count(*) FROM parked_items WHERE workflow_id = $1) AS parked,
  (SELECT count(*) FROM ledger_entries l WHERE l.workflow_id = $1 AND l.reverses IS NULL
      AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference))
      AS ledger_live,
  (SELECT count(*) FROM ledger_entries WHERE workflow_id = $1 AND reverses IS NOT NULL)
      AS ledger_reversals,
  (SELECT coalesce(sum(amount_paise), 0) FROM ledger_entries WHERE workflow_id = $1
      AND currency = 'INR') AS ledger_net_paise,
  (SELECT count(*) FROM stock_movements m WHERE m.workflow_id = $1 AND m.reverses IS NULL
      AND NOT EXISTS (SELECT 1 FROM stock_movements r WHERE r.reverses = m.key))
      AS stock_live,
  (SELECT count(*) FROM stock_movements WHERE workflow_id = $1 AND reverses IS NOT NULL)
      AS stock_reversals,
  (SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'debit-note') AS debit_notes,
  (SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'withdrawal') AS withdrawals,
  (SELECT count(*) FROM held_lines WHERE workflow_id = $1) AS awaiting_receipt,
  (SELECT count(*) FROM invoice_fingerprints WHERE workflow_id = $1
      AND duplicate_of IS NOT NULL) AS possible_duplicates,
  (SELECT count(*) FROM handovers WHERE workflow_id = $1) AS handovers,
  (SELECT count(*) FROM handovers WHERE workflow_id = $1 AND decision IS NULL)
      AS handovers_pending
"""


async def status_counts(pool: asyncpg.Pool, workflow_id: str) -> dict[str, int]:
    """Live and reversed rows of a run (`recon status`)."""
    return {k: int(v) for k, v in (await pool.fetchrow(_STATUS_COUNTS, workflow_id)).items()}


async def ledger_net_by_currency(pool: asyncpg.Pool, workflow_id: str) -> dict[str, int]:
    """The net of every entry of a run (reversals included) per currency, each in its own minor
    unit: `ledger_net_paise` is the ₹ one, and two currencies are never added."""
    return {r["currency"]: int(r["net"]) for r in await pool.fetch(
        "SELECT currency, sum(amount_paise) AS net FROM ledger_entries WHERE workflow_id = $1"
        " GROUP BY currency ORDER BY currency", workflow_id)}


async def ledger_references(pool: asyncpg.Pool, workflow_id: str) -> list[asyncpg.Record]:
    """Every ledger entry of a run in posting order, each with whether a reversal points at it."""
    return await pool.fetch(
        "SELECT l.reference, l.supplier_id, l.amount_paise, l.currency, l.kind,"
        " EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference) AS reversed"
        " FROM ledger_entries l WHERE l.workflow_id = $1 ORDER BY l.posted_at, l.reference",
        workflow_id,
    )


async def run_wrote(pool: asyncpg.Pool, workflow_id: str) -> bool:
    """Has this id read invoices or posted to the ledger (a run Postgres knows)?"""
    return bool(await pool.fetchval(
        "SELECT 1 FROM run_invoices WHERE workflow_id = $1 UNION ALL "
        "SELECT 1 FROM ledger_entries WHERE workflow_id = $1 LIMIT 1", workflow_id
    ))


async def rows_written(pool: asyncpg.Pool, workflow_id: str) -> int:
    """Ledger entries plus invoices read under this id: zero means the run never wrote."""
    return await pool.fetchval(
        "SELECT count(*) FROM ledger_entries WHERE workflow_id = $1", workflow_id
    ) + await pool.fetchval("SELECT count(*) FROM run_invoices WHERE workflow_id = $1", workflow_id)


async def supplier_exists(pool: asyncpg.Pool, supplier_id: str) -> bool:
    return bool(await pool.fetchval("SELECT 1 FROM suppliers WHERE supplier_id = $1", supplier_id))


async def supplier_posted(pool: asyncpg.Pool, workflow_id: str, supplier_id: str) -> bool:
    """Did the run post a ledger entry or a stock movement for this supplier?"""
    return bool(await pool.fetchval(
        "SELECT 1 FROM ledger_entries WHERE workflow_id = $1 AND supplier_id = $2"
        " UNION ALL SELECT 1 FROM stock_movements WHERE workflow_id = $1 AND supplier_id = $2",
        workflow_id, supplier_id,
    ))


async def forward_references(pool: asyncpg.Pool, workflow_id: str,
                             references: list[str]) -> set[str]:
    """Which of these references are forward entries (not reversals) of the run."""
    return {r["reference"] for r in await pool.fetch(
        "SELECT reference FROM ledger_entries WHERE workflow_id = $1 AND reference = ANY($2)"
        " AND kind <> 'reversal'", workflow_id, references)}


async def live_rows_of_invoice(pool: asyncpg.Pool, workflow_id: str, invoice_no: str) -> int:
    """Live ledger entries plus live stock movements of one invoice."""
    return await pool.fetchval(
        "SELECT (SELECT count(*) FROM live_ledger_entries WHERE workflow_id = $1"
        "         AND invoice_no = $2)"
        "     + (SELECT count(*) FROM live_stock_movements WHERE workflow_id = $1"
        "         AND invoice_no = $2)",
        workflow_id, invoice_no,
    )
