"""What the desk's *a night* page reads beyond its figures (recon/desk/night_details.py): what each
step left on record and how many tries it took, the ledger entries with their state in the
outside ledger, held lines, the night's mail with its delivery state, and the undos it saw.

The browser never reads Temporal's history: a step's attempts are what Postgres keeps of them
(the model book's requests, the outside ledger's posting tries, the mail's delivery tries, and
the tries a step made before it handed the night to a person). Read-only, and every statement
is by the night's id, on the indexes each table has for it.
"""

from __future__ import annotations

import asyncpg

Db = asyncpg.Connection | asyncpg.Pool

SHOWN = 500  # rows of one kind a page lists; the rest are counted ("and 1,234 more")

_STEPS = """
SELECT
  (SELECT count(*) FROM run_invoices WHERE workflow_id = $1) AS invoices,
  (SELECT count(*) FROM invoice_reads WHERE workflow_id = $1) AS reads,
  (SELECT count(*) FROM extractions WHERE workflow_id = $1) AS extracted,
  (SELECT count(*) FROM model_calls WHERE workflow_id = $1) AS model_requests,
  (SELECT count(*) FROM model_calls WHERE workflow_id = $1 AND outcome <> 'answered')
      AS model_unanswered,
  (SELECT count(DISTINCT attempt) FROM model_calls WHERE workflow_id = $1) AS model_attempts,
  (SELECT lines FROM lines_matched WHERE workflow_id = $1) AS lines_matched,
  (SELECT count(*) FROM comparisons WHERE workflow_id = $1) AS compared,
  (SELECT count(*) FROM mismatches WHERE workflow_id = $1) AS mismatches,
  (SELECT count(*) FROM ledger_entries WHERE workflow_id = $1) AS ledger_rows,
  (SELECT coalesce(max(attempts), 0) FROM ledger_postings WHERE workflow_id = $1)
      AS posting_attempts,
  (SELECT count(*) FROM stock_movements WHERE workflow_id = $1) AS stock_rows,
  (SELECT passed FROM gate_outcomes WHERE night = $1 AND scope = ''
      ORDER BY generation DESC LIMIT 1) AS gate_passed,
  (SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind IN ('debit-note', 'withdrawal'))
      AS notes,
  (SELECT coalesce(max(attempts), 0) FROM outbox WHERE workflow_id = $1
      AND kind IN ('debit-note', 'withdrawal')) AS note_attempts,
  (SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'summary') AS summaries,
  (SELECT coalesce(jsonb_object_agg(step, attempts), '{}'::jsonb) FROM (
      SELECT step, sum(attempts) AS attempts FROM handovers WHERE workflow_id = $1
      GROUP BY step) h) AS handed_over
"""


async def steps_of(conn: Db, workflow_id: str) -> asyncpg.Record:
    """One row: what each step wrote and the tries Postgres keeps of it."""
    return await conn.fetchrow(_STEPS, workflow_id)


async def ledger_of(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    """Every ledger entry of the night (reversals too), each with whether a reversal points at it
    and its posting in the outside ledger (none when the night posts only to recon's own)."""
    return await conn.fetch(
        "SELECT l.reference, l.invoice_no, l.line_no, l.supplier_id, l.kind, l.amount_paise,"
        " l.currency, l.reverses,"
        " EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference) AS reversed,"
        " p.ledger, p.outside_id, p.state AS outside_state, p.words AS outside_words,"
        " p.attempts AS outside_attempts"
        " FROM ledger_entries l LEFT JOIN ledger_postings p USING (reference)"
        " WHERE l.workflow_id = $1 ORDER BY l.posted_at, l.reference LIMIT $2",
        workflow_id, SHOWN)


async def held_of(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    """Lines billed before their goods came: held, and claimed on `held_until` if the goods
    have not come by then."""
    return await conn.fetch(
        "SELECT invoice_no, line_no, supplier_id, sku, qty, qty_open, held_until, evidence"
        " FROM held_lines WHERE workflow_id = $1 ORDER BY held_until, invoice_no, line_no"
        " LIMIT $2", workflow_id, SHOWN)


async def mail_of(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    """The night's debit notes, withdrawals, summary and handover mail, with delivery state."""
    return await conn.fetch(
        "SELECT o.key, o.kind, o.supplier_id, coalesce(s.name, '') AS supplier_name, o.recipient,"
        " o.subject, o.body, o.amount_paise, o.reverses, o.created_at, o.sent_at, o.failed_at,"
        " o.attempts, o.last_error, o.next_attempt_at"
        " FROM outbox o LEFT JOIN suppliers s USING (supplier_id)"
        " WHERE o.workflow_id = $1 ORDER BY o.kind = 'summary', o.created_at, o.key LIMIT $2",
        workflow_id, SHOWN)


async def undos_of(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    """Each undo the night saw (a generation raised), newest last."""
    return await conn.fetch(
        "SELECT raised_by, raised_at FROM run_generations WHERE workflow_id = $1"
        " ORDER BY raised_at", workflow_id)


async def decisions_of(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    """Every signed decision, undo or redo used on the night, who signed it and whether a passkey
    (the desk) or a key file signed it: the uses Postgres spent, in order."""
    return await conn.fetch(
        "SELECT s.purpose, s.decision, s.handover_no, s.scope, s.signer, s.used_at,"
        " a.signature_sha256 IS NOT NULL AS by_passkey"
        " FROM spent_signatures s LEFT JOIN passkey_assertions a USING (signature_sha256)"
        " WHERE s.night = $1 ORDER BY s.used_at", workflow_id)
