"""Steps 5 and 6 in SQL: weigh each matched line against its PO line's open quantity, cumulatively
across nights, and flag the mismatches (docs/design.md §12); and the reads of the comparisons
the later steps walk.

Per PO line, the open quantity is received to date minus what earlier nights accepted (step 4's
snapshot). The night's lines of the PO line (its own and those carried from earlier nights) take
it in order of the document's own date (the night the bill came in when it states none), supplier,
number and line (docs/books.md "Dates"). A line's outcome:

* it is covered: accepted whole;
* part of it is not received yet but is within the order, and its grace window is open: held
  awaiting receipt, whole (nothing accepted, posted, booked or noted), carried to later nights;
* otherwise: claimed now, accepting what is covered; the rest is a quantity adjustment.

`comparisons.received_qty` is the received quantity a line is credited with (what it accepted):
step 8 books exactly that, so stock is booked once per received unit.
"""

from __future__ import annotations

from datetime import date

import asyncpg

from recon.domain import price_rule
from recon.domain.keys import ADJUSTMENT, row_template
from recon.domain.match_policy import MatchPolicy
from recon.store.db import both, lock_run, spare_connection
from recon.store.invoices import label_sql, night_date_sql
from recon.store.lanes import LANE_LINES
from recon.store.matching import snapshot_missing

# One statement: the weighing of every matched line, then the three things it fills (the
# comparisons and acceptances of what is claimed, the held lines of what waits for its goods).
_WEIGH = """
WITH lines AS (
    SELECT l.invoice_no, l.line_no, l.supplier_id, l.sku, l.qty,
           l.unit_price_paise, m.po_number, m.po_price_paise, l.price_exact, m.po_price_exact,
           coalesce(m.billed_night, $2) AS billed_night, m.issued_on,
           s.qty_received,
           -- what the order allows: the quantity ordered and the over-delivery tolerance
           floor(coalesce(s.qty_ordered, 2147483647)::numeric * (100 + $7::numeric) / 100)::bigint
               AS qty_ordered,
           coalesce(s.qty_prior, 0) AS qty_prior,
           coalesce(sum(l.qty) OVER (PARTITION BY m.po_number, m.sku
                                     ORDER BY coalesce(m.issued_on, m.billed_night, $2),
                                              l.supplier_id, l.invoice_no, l.line_no
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                    0) AS cum_before
    FROM invoice_lines l
    JOIN line_matches m ON m.workflow_id = l.workflow_id AND m.invoice_no = l.invoice_no
                       AND m.line_no = l.line_no
    JOIN stock_snapshots s ON s.workflow_id = l.workflow_id AND s.po_number = m.po_number
                          AND s.sku = m.sku
    WHERE l.workflow_id = $1 AND ($5::text IS NULL OR l.supplier_id = $5)
), weighed AS (
    SELECT *,
           -- never more than arrived, nor more than the order allows (an over-delivery billed as
           -- delivered is claimed beyond the order, whatever arrived)
           least(qty, greatest(least(qty_received, qty_ordered) - qty_prior - cum_before, 0))
               AS take,
           qty - least(qty, greatest(qty_ordered - qty_prior - cum_before, 0)) AS beyond
    FROM lines
), judged AS (
    SELECT *, (qty - take - beyond > 0 AND $2 < billed_night + $3::int) AS held
    FROM weighed
), compared AS (
    INSERT INTO comparisons (workflow_id, seq, invoice_no, line_no, supplier_id, sku,
                             invoiced_qty, received_qty, invoice_price_paise, po_price_paise,
                             received_to_date, prior_accepted, beyond_order, po_number,
                             invoice_price_exact, po_price_exact)
    SELECT $1, $6 + row_number() OVER (ORDER BY invoice_no, line_no), invoice_no, line_no,
           supplier_id, sku, qty, take, unit_price_paise, po_price_paise, qty_received,
           qty_prior + cum_before, beyond, po_number, price_exact, po_price_exact
    FROM judged WHERE NOT held
    RETURNING 1
), accepted AS (
    INSERT INTO acceptances (workflow_id, invoice_no, line_no, warehouse, business_date,
                             supplier_id, po_number, sku, qty_accepted)
    SELECT $1, invoice_no, line_no, $4, $2, supplier_id, po_number, sku, take
    FROM judged WHERE NOT held
), held AS (
    INSERT INTO held_lines (workflow_id, invoice_no, line_no, warehouse, billed_night,
                            held_until, supplier_id, po_number, sku, description, qty,
                            unit_price_paise, qty_open, beyond_order, evidence, price_exact,
                            issued_on)
    SELECT $1, invoice_no, line_no, $4, billed_night, billed_night + $3::int, supplier_id,
           po_number, sku,
           -- read here, not carried through the weighing of every line: few lines are held
           (SELECT d.description FROM invoice_lines d WHERE d.workflow_id = $1
              AND d.invoice_no = judged.invoice_no AND d.line_no = judged.line_no),
           qty, unit_price_paise, take, beyond,
           'billed ' || qty || ' x ' || sku || ' on ' || po_number || ', ' || qty_received
             || ' received to ' || $2 || ', ' || qty_prior + cum_before
             || ' billed before; awaiting receipt of ' || (qty - take - beyond)
             || ', claimed on ' || (billed_night + $3::int) || ' if it has not come',
           price_exact, issued_on
    FROM judged WHERE held
)
SELECT count(*) FROM compared
"""

# Each own invoice's lines as one fingerprint: PO line, quantity and price, as a multiset; with
# its first PO number, by which it is found (migration 071: the index keeps a night's bills
# together instead of scattering them by their md5). A fingerprint depends on the lines alone, not
# on the weighing: step 5 takes them on a second connection while it weighs, in a transaction of
# their own, and an attempt after a crash adds the ones missing.
_FINGERPRINT = """
INSERT INTO invoice_fingerprints (invoice_no, workflow_id, supplier_id, billed_night, first_po,
                                  fingerprint)
SELECT l.invoice_no, $1, min(l.supplier_id), $2, min(coalesce(l.po_number, '')),
       md5(string_agg(coalesce(l.po_number, '') || '/' || l.sku || ' ' || l.qty || ' @'
                      || l.unit_price_paise, ','
                      ORDER BY l.po_number, l.sku, l.qty, l.unit_price_paise))
FROM invoice_lines l
WHERE l.workflow_id = $1 AND ($3::text IS NULL OR l.supplier_id = $3)
  AND NOT EXISTS (SELECT 1 FROM line_matches m WHERE m.workflow_id = $1
                  AND m.invoice_no = l.invoice_no AND m.line_no = l.line_no
                  AND m.carried_from IS NOT NULL)
GROUP BY l.invoice_no
ON CONFLICT DO NOTHING
"""

# A held line whose bill is a possible duplicate says so in its evidence (the summary's "awaiting
# receipt" list reads it); once, whichever attempt of step 6 gets here first.
_HELD_DUPLICATES = """
UPDATE held_lines h SET evidence = h.evidence || ', possible duplicate of ' || @DUPLICATE_OF@
FROM invoice_fingerprints f
WHERE h.workflow_id = $1 AND f.workflow_id = $1 AND f.invoice_no = h.invoice_no
  AND f.duplicate_of IS NOT NULL AND h.evidence NOT LIKE '%possible duplicate of%'
""".replace("@DUPLICATE_OF@", label_sql("f.duplicate_of", "f.supplier_id",
                                        night_date_sql("f.duplicate_night")))

# A bill whose fingerprint an earlier bill of the same supplier has (an earlier night, or earlier
# in this night's order) under another number, and for which the order has no room: some line of
# it goes beyond the quantity ordered, counting the earlier bills. That is a possible duplicate,
# held at the gate, whatever the receipts say. A repeat the order has room for (100 and 100 more
# of a PO line of 200) is an expected partial bill.
#
# Written so that no plan can be quadratic, whatever the statistics say: it runs in step 6, after
# step 5 refreshed them (run in the same transaction that inserted the night's rows, the planner
# guessed one row, and a 10k night behind nine others spent 200 s comparing every fingerprint
# with every comparison); the candidates are materialized first, and each probes the primary key
# and the (supplier, first PO, fingerprint) index once.
_DUPLICATES = """
WITH beyond AS MATERIALIZED (
    -- the night's bills the order has no room for, claimed or held awaiting receipt (a re-bill of
    -- a short delivery waits for goods that will not come): few, found in one scan of the night
    SELECT invoice_no FROM comparisons WHERE workflow_id = $1 AND beyond_order > 0
    UNION
    SELECT invoice_no FROM held_lines WHERE workflow_id = $1 AND beyond_order > 0
), d AS MATERIALIZED (
    SELECT f.invoice_no, e.invoice_no AS dup, e.workflow_id AS night
    FROM beyond b
    CROSS JOIN LATERAL (  -- OFFSET 0: a probe of the primary key per candidate, never a scan
        SELECT f.invoice_no, f.supplier_id, f.first_po, f.fingerprint, f.billed_night
        FROM invoice_fingerprints f WHERE f.workflow_id = $1 AND f.invoice_no = b.invoice_no
        OFFSET 0
    ) f
    CROSS JOIN LATERAL (
        -- the earliest earlier bill with the same fingerprint, by the (supplier, first PO,
        -- fingerprint) index; it counts while it stands: billed in this night, accepted by a live
        -- acceptance, or held awaiting receipt (an undone bill is no longer on the books)
        SELECT e.invoice_no, e.workflow_id FROM invoice_fingerprints e
        WHERE e.supplier_id = f.supplier_id AND e.first_po = f.first_po
          AND e.fingerprint = f.fingerprint
          AND (e.billed_night, e.invoice_no) < (f.billed_night, f.invoice_no)
          AND (e.workflow_id = $1
               OR EXISTS (SELECT 1 FROM acceptances a WHERE a.invoice_no = e.invoice_no AND a.live)
               OR EXISTS (SELECT 1 FROM held_lines h WHERE h.invoice_no = e.invoice_no))
        ORDER BY e.billed_night, e.invoice_no
        LIMIT 1
    ) e
)
UPDATE invoice_fingerprints t SET duplicate_of = d.dup, duplicate_night = d.night
FROM d WHERE t.workflow_id = $1 AND t.invoice_no = d.invoice_no AND t.duplicate_of IS NULL
"""


async def compare_quantities(pool: asyncpg.Pool, workflow_id: str, business_date: date,
                             warehouse: str, policy: MatchPolicy) -> int:
    """Step 5: weigh the night's matched lines once; returns its comparisons (held lines have
    none). The first complete weighing stands: a retry, reset or resume finds its rows."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_run(conn, workflow_id)
        done = await conn.fetchval(
            "SELECT recon_night_has_rows('acceptances', $1)"
            " OR recon_night_has_rows('held_lines', $1)", workflow_id)
        # The weighing sorts the night's lines twice (a 100k night: ~35 MB each): in memory.
        await conn.execute("SET LOCAL work_mem = '256MB'")
        async with spare_connection(pool) as other:
            if other is None:
                if not done:
                    await _weigh_lines(conn, workflow_id, business_date, warehouse, policy, None)
                await _fingerprint(conn, workflow_id, business_date, None)
            else:
                async def fingerprints() -> None:
                    async with other.transaction():
                        await other.execute("SET LOCAL work_mem = '256MB'")  # its sort, too
                        await _fingerprint(other, workflow_id, business_date, None)

                if done:
                    await fingerprints()
                else:
                    await both(_weigh_lines(conn, workflow_id, business_date, warehouse, policy,
                                            None), fingerprints())
        return int(await conn.fetchval(
            "SELECT count(*) FROM comparisons WHERE workflow_id = $1", workflow_id))


async def _weigh(conn: asyncpg.Connection, workflow_id: str, business_date: date,
                 warehouse: str, policy: MatchPolicy, supplier_id: str | None) -> None:
    """Weigh the night's lines (or one supplier's) and fingerprint its bills, on one connection."""
    await _weigh_lines(conn, workflow_id, business_date, warehouse, policy, supplier_id)
    await _fingerprint(conn, workflow_id, business_date, supplier_id)


async def _weigh_lines(conn: asyncpg.Connection, workflow_id: str, business_date: date,
                       warehouse: str, policy: MatchPolicy, supplier_id: str | None) -> None:
    """Numbering comparisons after those kept."""
    after = await conn.fetchval(
        "SELECT coalesce(max(seq), 0) FROM comparisons WHERE workflow_id = $1", workflow_id)
    # A large night's weighing joins whole sets (its lines, matches and snapshot): by hashing.
    # Left to the estimates it probed the lines' primary key once per matched line (a 100k night:
    # 0.75 s of reading instead of 0.5 s, 2.9 s for the statement instead of 2.7 s). A small night
    # on a database of many is the opposite case (its few rows by index, never a table hashed
    # whole), so only from LANE_LINES lines, and only for this statement: step 6's duplicate check
    # is built on probes (docs/design.md §8). Its three inputs are read by their indexes on the
    # workflow id: while the history is a few nights, the statistics make the night a large share
    # of each table, and the planner scanned every night's rows to find it (+0.25 s a statement
    # by the third 20k night, growing with each night until the share was small enough).
    large = await conn.fetchval(
        "SELECT lines >= $2 FROM lines_matched WHERE workflow_id = $1", workflow_id, LANE_LINES)
    if large:
        await conn.execute("SET LOCAL enable_nestloop = off; SET LOCAL enable_seqscan = off")
    await conn.fetchval(_WEIGH, workflow_id, business_date, policy.receipt_grace_days, warehouse,
                        supplier_id, after, policy.overdelivery_tolerance_percent)
    if large:
        await conn.execute("RESET enable_nestloop; RESET enable_seqscan")


async def _fingerprint(conn: asyncpg.Connection, workflow_id: str, business_date: date,
                       supplier_id: str | None) -> None:
    await conn.execute(_FINGERPRINT, workflow_id, business_date, supplier_id)


# The price rule (recon.domain.price_rule, the text MatchPolicy.tolerates reads too) over the
# comparison's columns and _FLAG's parameters: the tolerances `_flag` passes third and fourth.
# Prices compared exactly: each side with every decimal its document states (`*_price_exact`,
# NULL when it is a whole number of paise).
_PRICE = "coalesce(invoice_price_exact, invoice_price_paise)"
_PO_PRICE = "coalesce(po_price_exact, po_price_paise)"
_PRICE_TOLERATED = price_rule.as_sql(price=_PRICE, po_price=_PO_PRICE,
                                     paise="$3::bigint", percent="$4::float8::numeric")

# A line carried from an earlier night's hold has its bill's fingerprint under the night the bill
# came in (`carried_from`), not under the night that claims it.
_FLAG = """
WITH carried AS MATERIALIZED (
    SELECT DISTINCT m.invoice_no, m.carried_from FROM line_matches m
    WHERE m.workflow_id = $1 AND m.carried_from IS NOT NULL
), taxed AS MATERIALIZED (
    -- the night's lines whose document states a tax (a carried line's, where the bill came in),
    -- found by the partial index of migration 082, so a night without tax reads nothing here;
    -- each with the rate it is expected at: its PO line's, else the rate of the longest HSN code
    -- the line's HSN begins with, in force on the document's own date (`issued_on`: a supply
    -- invoiced before a change of rate keeps the old rate, CGST Act s.14), else on the night
    -- the bill came in (a document that states no date; master data, migration 082)
    SELECT x.*, coalesce(po.tax_rate, h.tax_rate) AS expected_rate,
           CASE WHEN po.tax_rate IS NULL THEN 'rate of HSN ' || h.hsn ELSE 'PO rate' END
               AS expected_from
    FROM (
        SELECT il.invoice_no, il.line_no, il.hsn, il.tax_rate, il.tax_split,
               il.cess_paise AS line_cess, il.cess_specific_paise AS line_cess_specific,
               il.taxable_paise AS line_taxable
        FROM invoice_lines il
        WHERE il.workflow_id = $1 AND il.tax_rate IS NOT NULL
          AND ($7::text IS NULL OR il.supplier_id = $7)
        UNION ALL
        SELECT il.invoice_no, il.line_no, il.hsn, il.tax_rate, il.tax_split, il.cess_paise,
               il.cess_specific_paise, il.taxable_paise
        FROM carried k
        JOIN invoice_lines il ON il.workflow_id = k.carried_from AND il.invoice_no = k.invoice_no
        WHERE il.tax_rate IS NOT NULL
    ) x
    JOIN line_matches lm ON lm.workflow_id = $1 AND lm.invoice_no = x.invoice_no
                        AND lm.line_no = x.line_no
    LEFT JOIN po_lines po ON po.po_number = lm.po_number AND po.sku = lm.sku
    LEFT JOIN LATERAL (
        SELECT r.hsn, r.tax_rate FROM hsn_tax_rates r
        WHERE po.tax_rate IS NULL AND x.hsn IS NOT NULL AND starts_with(x.hsn, r.hsn)
          AND r.valid_from <= coalesce(lm.issued_on, lm.billed_night, $6)
        ORDER BY length(r.hsn) DESC, r.valid_from DESC LIMIT 1
    ) h ON true
), c AS (
    SELECT c.*, coalesce(f.duplicate_of, fc.duplicate_of) AS duplicate_of,
           coalesce(f.duplicate_night, fc.duplicate_night) AS duplicate_night,
           t.tax_rate, t.tax_split, t.line_cess, t.line_cess_specific, t.line_taxable,
           t.expected_rate, t.expected_from,
           -- the document's own quantity and unit, when step 3 restated them: a carried
           -- line's where the bill came in, read by its key for those few lines only (joined on
           -- coalesce(carried_from, workflow_id), no index applied: every night's lines in the
           -- table were hashed, 64k rows and 85 ms for a 500-invoice night in the second round
           -- of bench/warehouses.py, growing with the history)
           CASE WHEN k.carried_from IS NULL THEN il.billed_as
                ELSE (SELECT d.billed_as FROM invoice_lines d
                      WHERE d.workflow_id = k.carried_from AND d.invoice_no = c.invoice_no
                        AND d.line_no = c.line_no) END AS billed_as,
           @PRICE@ <> @PO_PRICE@ AND NOT @PRICE_TOLERATED@ AS price_flagged
    FROM comparisons c
    LEFT JOIN invoice_fingerprints f ON f.workflow_id = c.workflow_id
                                    AND f.invoice_no = c.invoice_no
    LEFT JOIN carried k ON k.invoice_no = c.invoice_no
    LEFT JOIN invoice_fingerprints fc ON fc.workflow_id = k.carried_from
                                     AND fc.invoice_no = k.invoice_no
    LEFT JOIN taxed t ON t.invoice_no = c.invoice_no AND t.line_no = c.line_no
    LEFT JOIN invoice_lines il ON il.workflow_id = c.workflow_id
                              AND il.invoice_no = c.invoice_no AND il.line_no = c.line_no
    WHERE c.workflow_id = $1 AND ($7::text IS NULL OR c.supplier_id = $7)
), found AS (
    SELECT invoice_no, line_no, supplier_id, 'qty' AS kind,
           -- numeric: no product of two bigints can overflow on the way; exact, rounded once to
           -- the paisa, half up (away from zero), as the invoices round
           round((invoiced_qty - received_qty)::numeric * @PRICE@) AS amount,
           'billed ' || invoiced_qty || ' x ' || sku
             || CASE WHEN received_to_date IS NULL THEN ', received ' || received_qty
                ELSE ', ' || received_to_date || ' received to date, '
                     || coalesce(prior_accepted, 0) || ' billed before'
                     || coalesce(': ' || (
                          SELECT string_agg(@EARLIER_BILL@, ', '
                                            ORDER BY a.business_date, a.invoice_no)
                          FROM (SELECT a.invoice_no, a.supplier_id, a.business_date
                                FROM acceptances a
                                WHERE a.warehouse = $5 AND a.po_number = c.po_number
                                  AND a.sku = c.sku AND a.live AND a.business_date < $6
                                  AND a.workflow_id <> $1 AND a.qty_accepted > 0
                                ORDER BY a.business_date DESC, a.invoice_no LIMIT 3) a), '')
                     || ', ' || received_qty || ' accepted'
                     || CASE WHEN beyond_order > 0
                             THEN ', ' || beyond_order || ' beyond the order'
                                  || CASE WHEN received_to_date >= coalesce(prior_accepted, 0)
                                                                  + invoiced_qty
                                          THEN ' (over-delivered: the goods came, the order did'
                                               || ' not call for them)' ELSE '' END
                             ELSE '' END
                END
             || coalesce(', possible duplicate of ' || @DUPLICATE_OF@, '')
             || coalesce(' (billed as ' || billed_as || ')', '') AS detail,
           tax_rate, tax_split, line_cess, line_taxable, expected_rate,
           -- the tax of an over-billing: on its taxable excess, at the invoice line's rate
           (invoiced_qty - received_qty)::numeric * @PRICE@ AS base, tax_rate AS rate,
           -- a specific cess is owed per unit: on the units billed beyond those received
           line_cess_specific::numeric * (invoiced_qty - received_qty) / nullif(invoiced_qty, 0)
               AS cess_by_units
    FROM c WHERE invoiced_qty <> received_qty
    UNION ALL
    SELECT invoice_no, line_no, supplier_id, 'price',
           round((@PRICE@ - @PO_PRICE@) * received_qty),
           'billed ' || @PRICE@ || ' paise per ' || sku
             || ', PO price ' || @PO_PRICE@
             || coalesce(', possible duplicate of ' || @DUPLICATE_OF@, '')
             || coalesce(' (billed as ' || billed_as || ')', ''),
           tax_rate, tax_split, line_cess, line_taxable, expected_rate,
           (@PRICE@ - @PO_PRICE@) * received_qty, tax_rate,
           NULL  -- a specific cess does not grow with the price: none of it was over-charged
    FROM c WHERE price_flagged
    UNION ALL
    -- a rate other than the PO line's: the difference of rates on the accepted units' taxable
    -- value (at the PO price when the price is claimed apart, so no rupee is taxed twice)
    SELECT invoice_no, line_no, supplier_id, 'tax', 0,
           'billed tax at ' || trim_scale(tax_rate) || '% on ' || sku || ', ' || expected_from
             || ' ' || trim_scale(expected_rate) || '%',
           tax_rate, tax_split, line_cess, line_taxable, expected_rate,
           received_qty::numeric
             * CASE WHEN price_flagged THEN @PO_PRICE@ ELSE @PRICE@ END,
           tax_rate - expected_rate, NULL
    FROM c WHERE tax_rate <> expected_rate
), parted AS (
    -- each part rounded half up (away from zero) to the paisa, per claimed line, as an
    -- e-invoice rounds each line's tax; CGST and SGST each half the rate; an ad valorem cess
    -- in proportion to the value claimed, a specific cess by the units claimed (a quantity
    -- claim only), the two summed and rounded once as the line's cess
    SELECT *,
           CASE WHEN tax_split = 'cgst+sgst' THEN round(base * rate / 200) END AS cgst,
           CASE WHEN tax_split = 'igst' THEN round(base * rate / 100) END AS igst,
           CASE WHEN tax_split = 'vat' THEN round(base * rate / 100) END AS vat,
           CASE WHEN kind <> 'tax' AND ((line_cess > 0 AND line_taxable > 0)
                                        OR cess_by_units > 0)
                THEN round(CASE WHEN line_cess > 0 AND line_taxable > 0
                                THEN line_cess::numeric * base / line_taxable ELSE 0 END
                           + coalesce(cess_by_units, 0)) END AS cess
    FROM found
), totalled AS (
    SELECT *, CASE WHEN tax_split IS NULL THEN amount
                   ELSE amount + coalesce(cgst, 0) * 2 + coalesce(igst, 0) + coalesce(vat, 0)
                        + coalesce(cess, 0) END AS total
    FROM parted
)
INSERT INTO mismatches (workflow_id, seq, reference, invoice_no, line_no, supplier_id,
                        kind, amount_paise, detail, taxable_paise, cgst_paise, sgst_paise,
                        igst_paise, cess_paise, vat_paise, tax_rate, expected_tax_rate)
SELECT $1, $8 + row_number() OVER (ORDER BY invoice_no, line_no, kind),
       format($2, invoice_no, line_no, kind),
       invoice_no, line_no, supplier_id, kind, total,
       detail || CASE WHEN kind = 'tax' THEN ': ' || (total - amount) || ' paise of tax on '
                       || base || ' paise taxable' ELSE '' END,
       CASE WHEN tax_split IS NOT NULL THEN amount END, cgst, cgst, igst, cess, vat,
       tax_rate, expected_rate
FROM totalled WHERE total <> 0
"""
# Evidence names bills as finance reads them (`INV-7001 (S001, night of ...)`), never by our
# references.
_FLAG = _FLAG.replace("@PRICE_TOLERATED@", _PRICE_TOLERATED).replace(
    "@PO_PRICE@", _PO_PRICE).replace("@PRICE@", _PRICE).replace(
    "@EARLIER_BILL@", label_sql("a.invoice_no", "a.supplier_id", "'night of ' || a.business_date")
).replace("@DUPLICATE_OF@", label_sql("duplicate_of", "supplier_id",
                                      night_date_sql("duplicate_night")))


async def flag_mismatches(pool: asyncpg.Pool, workflow_id: str, business_date: date,
                          warehouse: str, policy: MatchPolicy) -> int:
    """Step 6: the run's mismatches, each with its ledger key; filled once. A quantity mismatch
    is the billed units no received unit covers, at the invoice price; a price mismatch, the
    difference beyond the tolerance on the units accepted."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_run(conn, workflow_id)
        have = await conn.fetchval(
            "SELECT count(*) FROM mismatches WHERE workflow_id = $1", workflow_id)
        if not have:
            await _flag(conn, workflow_id, business_date, warehouse, policy, None)
            have = await conn.fetchval(
                "SELECT count(*) FROM mismatches WHERE workflow_id = $1", workflow_id)
    return int(have)


async def _flag(conn: asyncpg.Connection, workflow_id: str, business_date: date,
                warehouse: str, policy: MatchPolicy, supplier_id: str | None) -> None:
    # Step 6, not 5: step 5 refreshed the statistics of the night's comparisons and fingerprints.
    await conn.execute(_DUPLICATES, workflow_id)
    await conn.execute(_HELD_DUPLICATES, workflow_id)
    after = await conn.fetchval(
        "SELECT coalesce(max(seq), 0) FROM mismatches WHERE workflow_id = $1", workflow_id)
    await conn.execute(
        _FLAG, workflow_id, row_template(ADJUSTMENT, workflow_id=workflow_id),
        policy.price_tolerance_paise, policy.price_tolerance_percent, warehouse, business_date,
        supplier_id, after)


# What a redo weighs again, in its scope: everything steps 4-6 derived, never what step 3 matched.
_FORGET = (
    "DELETE FROM mismatches WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)",
    "DELETE FROM comparisons WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)",
    "DELETE FROM acceptances WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)",
    "DELETE FROM held_lines WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2)",
    "DELETE FROM invoice_fingerprints WHERE workflow_id = $1"
    " AND ($2::text IS NULL OR supplier_id = $2)",
    "DELETE FROM stock_snapshots s WHERE s.workflow_id = $1 AND ($2::text IS NULL OR EXISTS ("
    " SELECT 1 FROM purchase_orders o WHERE o.po_number = s.po_number AND o.supplier_id = $2))",
)


async def weigh_again(pool: asyncpg.Pool, workflow_id: str, business_date: date,
                      warehouse: str, policy: MatchPolicy, supplier_id: str | None,
                      generation: int) -> int:
    """A redo after an undo weighs its scope again (steps 4-6) before it posts: the undo opened
    quantities (its own and maybe an earlier night's), and the redo takes what is open now, not
    what was open when the night first ran. Once per (scope, generation): a retried or reset
    redo finds the weighing done and posts what it found. Returns the scope's mismatches."""
    scope = supplier_id or ""
    async with pool.acquire() as conn, conn.transaction():
        await lock_run(conn, workflow_id)
        fresh = await conn.fetchval(
            "INSERT INTO reweighings (workflow_id, scope, generation) VALUES ($1, $2, $3)"
            " ON CONFLICT DO NOTHING RETURNING 1", workflow_id, scope, generation)
        if fresh:
            await conn.execute("SET LOCAL work_mem = '256MB'")  # as step 5 weighs
            for statement in _FORGET:
                await conn.execute(statement, workflow_id, supplier_id)
            await snapshot_missing(conn, workflow_id, warehouse, business_date)
            await _weigh(conn, workflow_id, business_date, warehouse, policy, supplier_id)
            await _flag(conn, workflow_id, business_date, warehouse, policy, supplier_id)
        return int(await conn.fetchval(
            "SELECT count(*) FROM mismatches WHERE workflow_id = $1"
            " AND ($2::text IS NULL OR supplier_id = $2)", workflow_id, supplier_id))
