"""Each ledger entry's state in the outside ledger (RECON_LEDGER=tryton|http): the outbox of
the books (migration 085). `ledger_entries` says what must be posted; a row here says where that
entry is in the other system. Rows are added as `waiting` by step 7 (the run's live entries) and
by the undo (reversals of entries the outside ledger holds), and moved on one at a time by
recon/ledger/pusher.py while it holds the run's fence.
"""

from __future__ import annotations

import asyncpg

WAITING, POSTED, VERIFIED, FAILED = "waiting", "posted", "verified", "failed"

_ENQUEUE_LIVE = """
INSERT INTO ledger_postings (reference, workflow_id, ledger)
SELECT l.reference, l.workflow_id, $3 FROM live_ledger_entries l
WHERE l.workflow_id = $1 AND ($2::text IS NULL OR l.supplier_id = $2)
ORDER BY l.reference COLLATE "C"
ON CONFLICT (reference) DO NOTHING
"""

_ENQUEUE_REVERSALS = """
INSERT INTO ledger_postings (reference, workflow_id, ledger)
SELECT r.reference, r.workflow_id, $3 FROM ledger_entries r
JOIN ledger_postings o ON o.reference = r.reverses AND o.outside_id IS NOT NULL
WHERE r.workflow_id = $1 AND r.reverses IS NOT NULL AND r.reference = ANY($2::text[])
ORDER BY r.reference COLLATE "C"
ON CONFLICT (reference) DO NOTHING
"""


async def enqueue_live(conn: asyncpg.Connection, workflow_id: str, supplier_id: str | None,
                       ledger: str) -> None:
    """Step 7: every live entry of the run (in scope) is owed to the outside ledger."""
    await conn.execute(_ENQUEUE_LIVE, workflow_id, supplier_id, ledger)


async def enqueue_reversals(conn: asyncpg.Connection, workflow_id: str, references: list[str],
                            ledger: str) -> None:
    """The undo: a reversal is owed outside only when its original got there."""
    await conn.execute(_ENQUEUE_REVERSALS, workflow_id, references, ledger)


# $3: reversals (true) or forward entries (false). A forward entry reversed since it was queued
# is no longer owed: only live ones are pushed.
_PENDING = """
SELECT l.reference, l.amount_paise, l.supplier_id, l.invoice_no, l.line_no, l.memo, l.reverses,
       l.posted_at::date AS posted_on, o.outside_id AS original_id, l.taxable_paise, l.cgst_paise,
       l.sgst_paise, l.igst_paise, l.cess_paise, l.vat_paise, l.currency,
       s.name AS supplier_name, s.gstin AS supplier_gstin
FROM ledger_postings p
JOIN ledger_entries l ON l.reference = p.reference
LEFT JOIN ledger_postings o ON o.reference = l.reverses
LEFT JOIN suppliers s ON s.supplier_id = l.supplier_id
WHERE p.workflow_id = $1 AND p.state IN ('waiting', 'failed')
  AND ($2::text IS NULL OR l.supplier_id = $2)
  AND (l.reverses IS NOT NULL) = $3
  AND ($3 OR EXISTS (SELECT 1 FROM live_ledger_entries v WHERE v.reference = l.reference))
ORDER BY l.reference
"""


async def pending(conn: asyncpg.Connection, workflow_id: str, supplier_id: str | None,
                  reversals: bool) -> list[asyncpg.Record]:
    """What is still to push, in key order (one order for racing workers)."""
    return await conn.fetch(_PENDING, workflow_id, supplier_id, reversals)


async def wait_for_ledger(conn: asyncpg.Connection, seconds: int) -> None:
    """Inside one entry's transaction: it may sit idle this long while the ledger answers (the
    worker's connections otherwise end an idle transaction after a few seconds)."""
    await conn.execute(f"SET LOCAL idle_in_transaction_session_timeout = '{int(seconds)}s'")


async def still_pending(conn: asyncpg.Connection, reference: str) -> bool:
    """Read inside the entry's fenced transaction: did another attempt settle it meanwhile?"""
    return bool(await conn.fetchval(
        "SELECT 1 FROM ledger_postings WHERE reference = $1 AND state IN ('waiting', 'failed')"
        " FOR UPDATE", reference))


async def still_pending_of(conn: asyncpg.Connection, references: list[str]) -> set[str]:
    """A batch's `still_pending`: which of `references` no attempt settled meanwhile, their rows
    locked in key order (LockRows over Sort, as `_MARK_VERIFIED` says), so two attempts taking
    overlapping batches wait for each other instead of each holding a row the other wants."""
    return {r["reference"] for r in await conn.fetch(
        "SELECT reference FROM ledger_postings WHERE reference = ANY($1::text[])"
        " AND state IN ('waiting', 'failed') ORDER BY reference COLLATE \"C\" FOR UPDATE",
        references)}


async def mark_posted(conn: asyncpg.Connection, outside_ids: dict[str, str]) -> None:
    """A batch's `mark(..., POSTED, id)`: each reference with the ledger's id for it."""
    await conn.execute(
        "UPDATE ledger_postings p SET state = 'posted', outside_id = b.outside_id, words = '',"
        " attempts = attempts + 1, updated_at = now()"
        " FROM unnest($1::text[], $2::text[]) AS b(reference, outside_id)"
        " WHERE p.reference = b.reference",
        list(outside_ids), list(outside_ids.values()))


async def mark(conn: asyncpg.Connection, reference: str, state: str, outside_id: str | None = None,
               words: str = "") -> None:
    await conn.execute(
        "UPDATE ledger_postings SET state = $2, outside_id = coalesce($3, outside_id),"
        " words = $4, attempts = attempts + 1, updated_at = now() WHERE reference = $1",
        reference, state, outside_id, words)


_TO_VERIFY = """
SELECT p.reference, p.outside_id, l.amount_paise, l.supplier_id, l.invoice_no, l.line_no, l.memo,
       l.reverses, l.posted_at::date AS posted_on, l.taxable_paise, l.cgst_paise, l.sgst_paise,
       l.igst_paise, l.cess_paise, l.vat_paise, l.currency, s.name AS supplier_name,
       s.gstin AS supplier_gstin
FROM ledger_postings p JOIN live_ledger_entries l ON l.reference = p.reference
LEFT JOIN suppliers s ON s.supplier_id = l.supplier_id
WHERE p.workflow_id = $1 AND ($2::text IS NULL OR l.supplier_id = $2)
ORDER BY p.reference
"""


async def to_verify(conn: asyncpg.Connection, workflow_id: str,
                    supplier_id: str | None) -> list[asyncpg.Record]:
    """Every live entry of the run in scope that is owed to the outside ledger."""
    return await conn.fetch(_TO_VERIFY, workflow_id, supplier_id)


# The rows are locked in key order before any is changed: a plain `UPDATE ... WHERE reference =
# ANY(...)` locks them in whatever order its plan visits them (an index scan by key, a bitmap scan
# by place in the table), so two verifying attempts of one run could each hold a row the other
# waits for. The locking clause sits above the sort (LockRows over Sort), so FOR UPDATE takes the
# rows one by one in ORDER BY order, and the UPDATE then touches only rows this transaction holds.
_MARK_VERIFIED = """
UPDATE ledger_postings p SET state = 'verified', updated_at = now()
FROM (SELECT reference FROM ledger_postings
      WHERE reference = ANY($1::text[]) AND state = 'posted'
      ORDER BY reference COLLATE "C" FOR UPDATE) AS locked
WHERE p.reference = locked.reference AND p.state = 'posted'
"""


async def mark_verified(conn: asyncpg.Connection, references: list[str]) -> None:
    await conn.execute(_MARK_VERIFIED, references)


async def states_of_run(conn: asyncpg.Connection | asyncpg.Pool,
                        workflow_id: str) -> list[asyncpg.Record]:
    """(ledger, state, n, words of one failed entry) per state: for `recon status`."""
    return await conn.fetch(
        "SELECT ledger, state, count(*) AS n, max(words) FILTER (WHERE state = 'failed') AS words"
        " FROM ledger_postings WHERE workflow_id = $1 GROUP BY ledger, state ORDER BY state",
        workflow_id)


async def states_of(conn: asyncpg.Connection | asyncpg.Pool,
                    references: list[str]) -> dict[str, asyncpg.Record]:
    """reference -> (ledger, state, outside_id, words): for `recon inspect --references`."""
    rows = await conn.fetch(
        "SELECT reference, ledger, state, outside_id, words FROM ledger_postings"
        " WHERE reference = ANY($1::text[])", references)
    return {r["reference"]: r for r in rows}


async def suppliers(conn: asyncpg.Connection | asyncpg.Pool) -> list[asyncpg.Record]:
    """(supplier_id, name, gstin) of every supplier: what `recon ledger check` maps to parties."""
    return await conn.fetch("SELECT supplier_id, name, gstin FROM suppliers ORDER BY supplier_id")
