"""Delivering the outbox, and reading what its messages say: every statement the mail side runs
against `outbox` and the rows its documents are rendered from.

The sender's transaction shape is the delivery guarantee (docs/architecture.md, "Where each recovery
mechanism lives": "did the mail go?"):

    BEGIN
    SELECT … FROM outbox WHERE due … LIMIT 1 FOR UPDATE SKIP LOCKED   -- claim_due
    SMTP MAIL / RCPT / DATA  → 250                                       -- the server accepts
    UPDATE outbox SET sent_at = …                                        -- mark_sent
    COMMIT

so these statements run inside the caller's transaction on the caller's connection; nothing
here opens one.
"""

from __future__ import annotations

import asyncpg

CHANNEL = "recon_outbox"  # LISTEN/NOTIFY channel the outbox insert trigger notifies

# One definition of a message's state, used by `recon mail`, `recon status` and the summary.
STATE_SQL = (
    "CASE WHEN sent_at IS NOT NULL THEN 'delivered' WHEN failed_at IS NOT NULL THEN 'failed'"
    " WHEN attempts > 0 THEN 'retrying' ELSE 'queued' END"
)

Db = asyncpg.Connection | asyncpg.Pool

# ---------------------------------------------------------------------------- the sender
_CLAIM = """
SELECT * FROM outbox
WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
ORDER BY next_attempt_at, created_at
LIMIT 1
FOR UPDATE SKIP LOCKED
"""
_MARK_SENT = """
UPDATE outbox SET sent_at = clock_timestamp(), attempts = attempts + 1,
    last_attempt_at = now(), last_error = NULL, message_id = $2,
    subject = coalesce($3, subject), body = coalesce($4, body), body_html = coalesce($5, body_html)
WHERE key = $1
"""
_RETRY_LATER = """
UPDATE outbox SET attempts = attempts + 1, last_attempt_at = now(), last_error = $2,
    next_attempt_at = clock_timestamp() + make_interval(secs => $3)
WHERE key = $1
"""
_PARK = """
UPDATE outbox SET attempts = attempts + 1, last_attempt_at = now(), last_error = $2,
    failed_at = clock_timestamp()
WHERE key = $1
"""
_NEXT_DUE = """
SELECT extract(epoch FROM min(next_attempt_at) - clock_timestamp())::float8 FROM outbox
WHERE sent_at IS NULL AND failed_at IS NULL
"""
_UNTRIED_NOTES = """
SELECT count(*) FROM outbox
WHERE workflow_id = $1 AND kind = 'debit-note' AND sent_at IS NULL AND failed_at IS NULL
  AND attempts = 0 AND $2::timestamptz > clock_timestamp() - make_interval(secs => $3)
"""


async def claim_due(conn: asyncpg.Connection) -> asyncpg.Record | None:
    """Lock the next due message for this transaction; skipped by every other sender."""
    return await conn.fetchrow(_CLAIM)


async def untried_notes(conn: asyncpg.Connection, workflow_id: str, created_at: object,
                        grace_seconds: float) -> int:
    """Debit notes of the run not tried yet, while the summary is younger than the grace."""
    return await conn.fetchval(_UNTRIED_NOTES, workflow_id, created_at, grace_seconds)


async def postpone_briefly(conn: asyncpg.Connection, key: str) -> None:
    """Let the summary wait a moment so the run's debit notes go first."""
    await conn.execute("UPDATE outbox SET next_attempt_at = clock_timestamp()"
                       " + interval '0.2 s' WHERE key = $1", key)


async def mark_sent(conn: asyncpg.Connection, key: str, message_id: str, subject: str | None,
                    text: str | None, html: str | None) -> None:
    """The server said 250: record it (and what was sent) in the claiming transaction."""
    await conn.execute(_MARK_SENT, key, message_id, subject, text, html)


async def retry_later(conn: asyncpg.Connection, key: str, reply: str, wait: float) -> None:
    await conn.execute(_RETRY_LATER, key, reply, wait)


async def park_refused(conn: asyncpg.Connection, key: str, reply: str) -> None:
    """Refused for good: the row stays with the server's reply, never tried again by itself."""
    await conn.execute(_PARK, key, reply)


async def seconds_to_next_due(conn: asyncpg.Connection) -> float | None:
    """How long an idle lane may sleep; None when nothing waits."""
    return await conn.fetchval(_NEXT_DUE)


async def undelivered(conn: Db, workflow_id: str) -> int:
    """Messages of the run still waiting for delivery (neither sent nor refused)."""
    return await conn.fetchval(
        "SELECT count(*) FROM outbox WHERE workflow_id = $1 AND sent_at IS NULL"
        " AND failed_at IS NULL", workflow_id)


# ---------------------------------------------------------------------------- answering a refusal
async def lock_message(conn: asyncpg.Connection, key: str) -> asyncpg.Record | None:
    """The message's delivery state, locked until the caller's transaction ends; `currency` is
    its amount's (a supplier's note: the supplier's; any other message: ₹)."""
    return await conn.fetchrow(
        "SELECT recipient, failed_at, sent_at, workflow_id, amount_paise,"
        " coalesce((SELECT s.currency FROM suppliers s WHERE s.supplier_id = o.supplier_id),"
        " 'INR') AS currency FROM outbox o WHERE key = $1 FOR UPDATE OF o", key)


async def queue_again(conn: asyncpg.Connection, key: str, to: str | None) -> None:
    """A refused message due at once, to a corrected address if one is given."""
    await conn.execute(
        "UPDATE outbox SET failed_at = NULL, next_attempt_at = now(),"
        " recipient = coalesce($2, recipient) WHERE key = $1", key, to)


async def wake_senders(conn: asyncpg.Connection) -> None:
    """Delivered with the caller's commit, so no sender looks before the row is due."""
    await conn.execute(f"NOTIFY {CHANNEL}")


# ---------------------------------------------------------------------------- reading messages
async def delivery_counts(conn: Db, workflow_id: str, kind: str) -> asyncpg.Record:
    """delivered / pending / failed messages of one kind of one run."""
    return await conn.fetchrow(
        "SELECT count(*) FILTER (WHERE sent_at IS NOT NULL) AS delivered,"
        " count(*) FILTER (WHERE sent_at IS NULL AND failed_at IS NULL) AS pending,"
        " count(*) FILTER (WHERE sent_at IS NULL AND failed_at IS NOT NULL) AS failed"
        " FROM outbox WHERE workflow_id = $1 AND kind = $2",
        workflow_id, kind,
    )


async def list_messages(conn: Db, workflow_id: str | None) -> list[asyncpg.Record]:
    return await conn.fetch(
        f"SELECT key, workflow_id, kind, recipient, subject, attempts, last_error,"
        f" created_at, sent_at, failed_at, next_attempt_at, {STATE_SQL} AS state"
        " FROM outbox WHERE $1::text IS NULL OR workflow_id = $1"
        " ORDER BY created_at, key",
        workflow_id,
    )


async def get_message(conn: Db, key: str) -> asyncpg.Record | None:
    return await conn.fetchrow(f"SELECT *, {STATE_SQL} AS state FROM outbox WHERE key = $1", key)


# ---------------------------------------------------------------------------- what messages say
# Each line a debit note claims, with the facts a supplier checks it by: what was received to date
# and billed before on the PO line (the weighing's figures), what the night accepted, and the bill
# it may repeat (its fingerprint is under the night the bill came in: a carried line's
# `carried_from`).
_NOTE_LINES = """
SELECT m.supplier_id, s.name, s.email, m.invoice_no, m.line_no, m.kind, m.amount_paise,
       s.currency, c.sku, c.invoiced_qty, c.received_qty,
       -- the prices as compared: with a fraction of a paisa when a document stated one
       coalesce(c.invoice_price_exact, c.invoice_price_paise) AS invoice_price_paise,
       coalesce(c.po_price_exact, c.po_price_paise) AS po_price_paise,
       c.po_number, c.received_to_date, c.prior_accepted, c.beyond_order,
       -- the original invoice's own date (CGST Rules r.53(1A)); the night it came in when the
       -- document states none
       coalesce(lm.issued_on, lm.billed_night) AS invoice_date,
       f.duplicate_of AS repeats, f.duplicate_night AS repeats_night,
       -- what a GST debit note states (docs/books.md "Tax"): the parts, the rates, the HSN
       s.gstin, m.taxable_paise, m.cgst_paise, m.sgst_paise, m.igst_paise, m.cess_paise,
       m.vat_paise, trim_scale(m.tax_rate)::text AS tax_rate,
       trim_scale(m.expected_tax_rate)::text AS expected_tax_rate,
       (SELECT il.hsn FROM invoice_lines il
        WHERE il.workflow_id = coalesce(lm.carried_from, m.workflow_id)
          AND il.invoice_no = m.invoice_no AND il.line_no = m.line_no) AS hsn
FROM open_mismatches m
JOIN suppliers s USING (supplier_id)
JOIN comparisons c ON c.workflow_id = m.workflow_id AND c.invoice_no = m.invoice_no
                  AND c.line_no = m.line_no
LEFT JOIN line_matches lm ON lm.workflow_id = m.workflow_id AND lm.invoice_no = m.invoice_no
                         AND lm.line_no = m.line_no
LEFT JOIN invoice_fingerprints f ON f.workflow_id = coalesce(lm.carried_from, m.workflow_id)
                                AND f.invoice_no = m.invoice_no
WHERE m.workflow_id = $1 AND ($2::text IS NULL OR m.supplier_id = $2)
ORDER BY m.supplier_id, m.invoice_no, m.line_no, m.kind
"""

# Per PO line of a note: the receipts dated on or before the night (the weighing's "received to
# date"), and the earlier bills live acceptances of earlier nights hold, newest first; a few each.
_NOTE_RECEIPTS = """
SELECT g.po_number, g.sku, coalesce(g.receipt_ref, 'receipt ' || g.receipt_id) AS receipt,
       g.received_on, g.qty_received
FROM unnest($1::text[], $2::text[]) AS k(po_number, sku)
CROSS JOIN LATERAL (
    SELECT * FROM goods_receipts g
    WHERE g.po_number = k.po_number AND g.sku = k.sku AND g.warehouse = $3
      AND g.received_on <= $4 AND g.qty_received > 0
    ORDER BY g.received_on DESC, g.receipt_id DESC LIMIT 5
) g
ORDER BY g.po_number, g.sku, g.received_on, g.receipt_id
"""

_NOTE_EARLIER_BILLS = """
SELECT a.po_number, a.sku, a.invoice_no, a.supplier_id, a.business_date,
       coalesce(lm.issued_on, lm.billed_night, a.business_date) AS invoice_date, a.qty_accepted
FROM unnest($1::text[], $2::text[]) AS k(po_number, sku)
CROSS JOIN LATERAL (
    SELECT * FROM acceptances a
    WHERE a.warehouse = $3 AND a.po_number = k.po_number AND a.sku = k.sku AND a.live
      AND a.business_date < $4 AND a.workflow_id <> $5 AND a.qty_accepted > 0
    ORDER BY a.business_date DESC, a.invoice_no LIMIT 3
) a
LEFT JOIN line_matches lm ON lm.workflow_id = a.workflow_id AND lm.invoice_no = a.invoice_no
                         AND lm.line_no = a.line_no
ORDER BY a.po_number, a.sku, a.business_date, a.invoice_no
"""

_SUPPLIERS = f"""
SELECT l.supplier_id, s.name, count(*) AS entries, sum(l.amount_paise) AS total, l.currency,
       o.key AS note_key, o.state AS note_state
FROM ledger_entries l
JOIN suppliers s USING (supplier_id)
LEFT JOIN (SELECT key, supplier_id, {STATE_SQL} AS state FROM live_debit_notes
           WHERE workflow_id = $1) o USING (supplier_id)
WHERE l.workflow_id = $1 AND l.kind <> 'reversal'
  AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference)
GROUP BY l.supplier_id, s.name, l.currency, o.key, o.state
ORDER BY l.supplier_id, l.currency
"""


async def debit_note_lines(conn: Db, workflow_id: str,
                           supplier_id: str | None) -> list[asyncpg.Record]:
    """The open (not parked) mismatch lines a debit note lists, by supplier, invoice, line."""
    return await conn.fetch(_NOTE_LINES, workflow_id, supplier_id)


async def debit_note_history(conn: Db, workflow_id: str, warehouse: str, business_date,
                             po_lines: list[tuple[str, str]]) -> tuple[list[asyncpg.Record],
                                                                      list[asyncpg.Record]]:
    """(receipts, earlier bills) of the PO lines a night's debit notes claim on."""
    pos, skus = [p for p, _ in po_lines], [s for _, s in po_lines]
    receipts = await conn.fetch(_NOTE_RECEIPTS, pos, skus, warehouse, business_date)
    bills = await conn.fetch(_NOTE_EARLIER_BILLS, pos, skus, warehouse, business_date, workflow_id)
    return receipts, bills


async def summary_suppliers(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    """Per supplier: live entries, their total in the currency they were posted in, and the state
    of the live debit note."""
    return await conn.fetch(_SUPPLIERS, workflow_id)


async def summary_parked(conn: Db, workflow_id: str) -> list[asyncpg.Record]:
    """What the summary lists as parked for a person."""
    return await conn.fetch(
        "SELECT p.invoice_no, r.supplier_id, p.line_no, p.step, p.reason FROM parked_items p"
        " LEFT JOIN run_invoices r ON r.workflow_id = p.workflow_id AND r.invoice_no = p.invoice_no"
        " WHERE p.workflow_id = $1 ORDER BY p.invoice_no, p.line_no NULLS FIRST", workflow_id)
