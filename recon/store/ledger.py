"""Posting to the ledger, Stripe-style: the primary key on `reference` is the invariant.

`INSERT ... ON CONFLICT DO NOTHING` means a second attempt of the same entry writes nothing, no
matter how many workers race. A row that is already there must hold the same payload; a different
amount under the same key is a bug and fails loudly.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from recon.domain.errors import KeyPayloadConflict, VerificationFailed
from recon.runtime import failpoints
from recon.store.fences import Fence


@dataclass(frozen=True)
class LedgerEntry:
    reference: str
    workflow_id: str
    invoice_no: str
    supplier_id: str
    line_no: int | None
    kind: str
    amount_paise: int
    memo: str = ""
    reverses: str | None = None
    # The parts of the amount (docs/books.md "Tax"), None on an entry without tax. A reversal
    # takes its original's parts, negated, whatever it is given.
    parts: TaxParts | None = None


@dataclass(frozen=True)
class TaxParts:
    """The taxable value and each tax of a claim, in paise; they add up to its amount."""

    taxable_paise: int
    cgst_paise: int | None = None
    sgst_paise: int | None = None
    igst_paise: int | None = None
    cess_paise: int | None = None
    vat_paise: int | None = None

    def row(self) -> tuple[int | None, ...]:
        return (self.taxable_paise, self.cgst_paise, self.sgst_paise, self.igst_paise,
                self.cess_paise, self.vat_paise)


_NO_PARTS = (None,) * 6
PART_COLUMNS = ("taxable_paise", "cgst_paise", "sgst_paise", "igst_paise", "cess_paise",
                "vat_paise")

# A reversal's parts are its original's, negated, read here: an undo reverses every part.
#
# The rows are inserted in key order, byte by byte (`ORDER BY x.r COLLATE "C"`), whatever order the
# caller gave and whatever plan the join gets. Why it must be the statement that orders them:
# each insert takes its key's lock (a racing poster of the same key waits for this transaction),
# so two posters of overlapping batches deadlock unless both take the keys in one order. Sorting
# the batch in Python was not enough: the LEFT JOIN below may run as a Hash Right Join (the batch
# hashed, rows emitted in hash order: measured, a sorted batch of 12 came out exactly reversed)
# or a Merge Join (the batch re-sorted by `reverses`, NULL for every forward entry), and which
# plan runs depends on the table's size and the batch's. An ORDER BY on the SELECT puts a Sort on
# top of whatever join runs, and an INSERT takes its rows in the order its SELECT yields them
# (tests/store/test_insert_order.py checks that under every join method). "C": byte order is
# code point order for UTF-8, the same for every database, whatever its default collation.
_INSERT = """
INSERT INTO ledger_entries
    (reference, workflow_id, invoice_no, supplier_id, line_no, kind, amount_paise, memo,
     reverses, fence_token, taxable_paise, cgst_paise, sgst_paise, igst_paise, cess_paise,
     vat_paise, currency)
SELECT r, w, i, s, l::int, k, a::bigint, m, v, $10::bigint,
       CASE WHEN v IS NULL THEN tx::bigint ELSE -o.taxable_paise END,
       CASE WHEN v IS NULL THEN cg::bigint ELSE -o.cgst_paise END,
       CASE WHEN v IS NULL THEN sg::bigint ELSE -o.sgst_paise END,
       CASE WHEN v IS NULL THEN ig::bigint ELSE -o.igst_paise END,
       CASE WHEN v IS NULL THEN ce::bigint ELSE -o.cess_paise END,
       CASE WHEN v IS NULL THEN va::bigint ELSE -o.vat_paise END,
       -- the amount's currency: a reversal's is its entry's, any other the supplier's
       coalesce(o.currency, (SELECT p.currency FROM suppliers p WHERE p.supplier_id = s), 'INR')
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
            $8::text[], $9::text[], $11::text[], $12::text[], $13::text[], $14::text[],
            $15::text[], $16::text[]) AS x(r, w, i, s, l, k, a, m, v, tx, cg, sg, ig, ce, va)
LEFT JOIN ledger_entries o ON o.reference = x.v
ORDER BY x.r COLLATE "C"
ON CONFLICT (reference) DO NOTHING
RETURNING reference
"""

_DIFFERENT = """
SELECT l.reference, l.amount_paise, x.a::bigint AS wanted, l.invoice_no, x.i AS wanted_invoice,
       l.supplier_id, x.s AS wanted_supplier
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS x(r, a, i, v, s)
JOIN ledger_entries l ON l.reference = x.r
WHERE l.amount_paise <> x.a::bigint OR l.invoice_no <> x.i OR l.reverses IS DISTINCT FROM x.v
   OR l.supplier_id <> x.s
"""


def _text(value: int | None) -> str | None:
    return None if value is None else str(value)


def insert_arguments(entries: list[LedgerEntry], fence: Fence | None) -> list[object]:
    """`_INSERT`'s parameters for a batch: one array per column, in the batch's order. Every array
    is a text[] (numbers cast in the statement): asyncpg knows text[] without asking, and asks
    Postgres about int[] and bigint[] (a recursive catalog query, 2-10 ms of planning) once per
    new pooled connection (recon/store/extractions.py)."""
    columns = [list(c) for c in zip(*[
        (e.reference, e.workflow_id, e.invoice_no, e.supplier_id, _text(e.line_no), e.kind,
         _text(e.amount_paise), e.memo, e.reverses)
        for e in entries
    ], strict=True)]
    parts = [[_text(v) for v in c] for c in zip(
        *[e.parts.row() if e.parts else _NO_PARTS for e in entries], strict=True)]
    return [*columns, fence.token if fence else None, *parts]


async def post_entries(
    conn: asyncpg.Connection, entries: list[LedgerEntry], fence: Fence | None = None
) -> int:
    """Post a batch in one transaction; returns how many rows were new. A crash loses at most
    this uncommitted batch, and its redo conflicts on every row that did commit. The statement
    takes the keys in key order (see `_INSERT`), so the batch may come in any order: racing
    posters of overlapping batches wait for each other and never deadlock."""
    if not entries:
        return 0
    async with conn.transaction():
        if fence is not None:
            await fence.check(conn)
        failpoints.hit("in_transaction", "ledger")
        inserted = await conn.fetch(_INSERT, *insert_arguments(entries, fence))
        if len(inserted) < len(entries):
            different = await conn.fetch(
                _DIFFERENT,
                [e.reference for e in entries],
                [_text(e.amount_paise) for e in entries],
                [e.invoice_no for e in entries],
                [e.reverses for e in entries],
                [e.supplier_id for e in entries],
            )
            if different:
                row = different[0]
                raise KeyPayloadConflict(
                    f"ledger key {row['reference']} already holds {row['amount_paise']} paise "
                    f"for {row['invoice_no']}/{row['supplier_id']}, this attempt wanted "
                    f"{row['wanted']} for {row['wanted_invoice']}/{row['wanted_supplier']} "
                    f"({len(different)} such key(s))"
                )
    return len(inserted)


# $4 the generation new entries go under, $5 the supplier in scope (NULL: all). A mismatch that
# already has a live entry in any generation is left alone: a reset that undid nothing posts
# nothing, and a redo after an undo posts exactly what was reversed, under fresh keys.
_NEXT = """
SELECT m.seq, recon_key(m.reference, $4) AS reference, m.invoice_no, m.supplier_id, m.line_no,
       m.kind, m.amount_paise, m.detail, m.taxable_paise, m.cgst_paise, m.sgst_paise,
       m.igst_paise, m.cess_paise, m.vat_paise,
       EXISTS (SELECT 1 FROM generate_series(1, $4) AS gen
               JOIN live_ledger_entries l ON l.reference = recon_key(m.reference, gen)) AS live
FROM open_mismatches m
WHERE m.workflow_id = $1 AND m.seq > $2 AND ($5::text IS NULL OR m.supplier_id = $5)
ORDER BY m.seq LIMIT $3
"""


def parts_of(row: asyncpg.Record) -> TaxParts | None:
    """A claim's parts as step 7 posts them (None: a claim without tax)."""
    if row["taxable_paise"] is None:
        return None
    return TaxParts(*(row[c] for c in PART_COLUMNS))


async def next_to_post(
    conn: asyncpg.Connection, workflow_id: str, after_seq: int, limit: int, generation: int,
    supplier_id: str | None,
) -> list[asyncpg.Record]:
    """Step 7's next batch of open mismatches after `after_seq`, in `seq` order, each with the
    key it posts under in `generation` and whether it is live already (then it is skipped)."""
    return await conn.fetch(_NEXT, workflow_id, after_seq, limit, generation, supplier_id)


_VERIFY = """
WITH g AS (SELECT recon_generation($1) AS n),
m AS (
    SELECT m.reference, m.amount_paise FROM open_mismatches m
    WHERE m.workflow_id = $1 AND ($2::text IS NULL OR m.supplier_id = $2)
),
candidates AS (
    SELECT m.reference AS base, recon_key(m.reference, gen) AS key
    FROM m, g, generate_series(1, g.n) AS gen
),
live AS (
    SELECT m.reference, m.amount_paise AS wanted, count(l.reference) AS n,
           count(*) FILTER (WHERE l.amount_paise <> m.amount_paise) AS different
    FROM m
    JOIN candidates c ON c.base = m.reference
    LEFT JOIN live_ledger_entries l ON l.reference = c.key
    GROUP BY m.reference, m.amount_paise
)
SELECT (SELECT count(*) FROM m) AS expected,
       (SELECT count(*) FROM live WHERE n = 0) AS missing,
       (SELECT count(*) FROM live WHERE n > 1) AS doubled,
       (SELECT count(*) FROM live WHERE different > 0) AS different,
       (SELECT count(*) FROM live_ledger_entries e
         WHERE e.workflow_id = $1 AND ($2::text IS NULL OR e.supplier_id = $2)
           AND NOT EXISTS (SELECT 1 FROM candidates c WHERE c.key = e.reference)) AS unexpected
"""


async def ever_undone(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> bool:
    """Has anything of this night ever been reversed? If not, every entry is live and every key
    is the generation-1 key, and the steps can skip the per-row live checks."""
    return bool(await conn.fetchval(
        "SELECT recon_generation($1) > 1 OR EXISTS (SELECT 1 FROM ledger_entries"
        " WHERE workflow_id = $1 AND reverses IS NOT NULL)",
        workflow_id,
    ))


async def verify_adjustments(
    conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str, supplier_id: str | None = None
) -> int:
    """Done means checked, and checked means *live*: every open mismatch (in scope) has exactly
    one entry that no reversal points at, with the same amount, and the run has no live forward
    entry that nobody flagged. A reversed entry counts as missing, so a redo of an undone night
    can never pass with a net of zero. Returns the number of entries verified."""
    row = await conn.fetchrow(_VERIFY, workflow_id, supplier_id)
    if row["missing"] or row["different"] or row["unexpected"] or row["doubled"]:
        raise VerificationFailed(
            f"ledger check for {workflow_id}"
            + (f" (supplier {supplier_id})" if supplier_id else "")
            + f": {row['missing']} missing, {row['different']} with a different amount, "
            f"{row['doubled']} posted twice, {row['unexpected']} not flagged, of "
            f"{row['expected']} expected (reversed entries do not count)"
        )
    return int(row["expected"])


async def live_adjustment_total(
    conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str, supplier_id: str | None = None
) -> int:
    """What the run's live ₹ entries add up to, in paise (reversed entries and reversals
    excluded; another currency's entries are never added to them)."""
    return int(await conn.fetchval(
        "SELECT coalesce(sum(amount_paise), 0) FROM live_ledger_entries"
        " WHERE currency = 'INR' AND workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)",
        workflow_id, supplier_id,
    ))
