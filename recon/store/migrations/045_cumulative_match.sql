-- The cumulative three-way match (docs/design.md §12): quantities are weighed per PO line across
-- nights, not per night.
--
-- Step 4's snapshot keeps, per PO line, what the night weighs its lines against: received to date
-- (receipts dated on or before the business date), ordered, and what earlier nights accepted.
ALTER TABLE stock_snapshots ADD COLUMN qty_ordered bigint;
ALTER TABLE stock_snapshots ADD COLUMN qty_prior bigint;
ALTER TABLE stock_snapshots ALTER COLUMN qty_received TYPE bigint;

-- A line's invoice date orders the night's lines of one PO line; a line carried from an earlier
-- night (held awaiting receipt there) names that night.
ALTER TABLE line_matches ADD COLUMN invoice_date date;
ALTER TABLE line_matches ADD COLUMN carried_from text;

-- The evidence a quantity mismatch names: received to date and accepted on earlier bills.
ALTER TABLE comparisons ADD COLUMN received_to_date bigint;
ALTER TABLE comparisons ADD COLUMN prior_accepted bigint;
ALTER TABLE comparisons ADD COLUMN beyond_order bigint;
ALTER TABLE comparisons ADD COLUMN po_number text;

-- What each night accepted of each PO line: the open quantity a later night sees is received to
-- date minus the live acceptances of earlier nights. Written with the night's comparisons (step 5);
-- an undo of the night (or of one supplier) makes its rows not live, a redo's stock booking makes
-- them live again. One live acceptance per invoice line, whichever night makes it: a line held
-- awaiting receipt is claimed once.
CREATE TABLE acceptances (
    workflow_id   text    NOT NULL,
    invoice_no    text    NOT NULL,
    line_no       integer NOT NULL,
    warehouse     text    NOT NULL,
    business_date date    NOT NULL,
    supplier_id   text    NOT NULL,
    po_number     text    NOT NULL,
    sku           text    NOT NULL,
    qty_accepted  bigint  NOT NULL CHECK (qty_accepted >= 0),
    live          boolean NOT NULL DEFAULT true
);
-- Three indexes, no more: a 100k night writes ~250k rows here (each index ~0.4 s of step 5).
-- A night has at most one row per line: step 5 fills once, and the claim index below refuses a
-- second live one.
CREATE UNIQUE INDEX acceptances_one_live_claim ON acceptances (invoice_no, line_no) WHERE live;
CREATE INDEX acceptances_run ON acceptances (workflow_id);
CREATE INDEX acceptances_po_line ON acceptances (warehouse, po_number, sku) WHERE live;

-- Lines a night held awaiting receipt: billed beyond what was received but within the order,
-- inside the grace window. Nothing was posted for them; each later night of the warehouse carries
-- them into its own match until one claims them (an acceptance) on or before `held_until`.
CREATE TABLE held_lines (
    workflow_id      text    NOT NULL,
    invoice_no       text    NOT NULL,
    line_no          integer NOT NULL,
    warehouse        text    NOT NULL,
    invoice_date     date    NOT NULL,
    held_until       date    NOT NULL,
    supplier_id      text    NOT NULL,
    po_number        text    NOT NULL,
    sku              text    NOT NULL,
    description      text    NOT NULL,
    qty              integer NOT NULL,
    unit_price_paise bigint  NOT NULL,
    qty_open         bigint  NOT NULL,
    evidence         text    NOT NULL,
    PRIMARY KEY (workflow_id, invoice_no, line_no)
);
CREATE INDEX held_lines_warehouse ON held_lines (warehouse, invoice_date);
CREATE INDEX held_lines_invoice ON held_lines (invoice_no, line_no);

-- Each invoice's lines as a fingerprint (PO line, quantity, price; as a multiset): a bill that
-- repeats an earlier bill of the same supplier under another number is a possible duplicate.
CREATE TABLE invoice_fingerprints (
    invoice_no    text NOT NULL,
    workflow_id   text NOT NULL,
    supplier_id   text NOT NULL,
    invoice_date  date NOT NULL,
    fingerprint   text NOT NULL,
    duplicate_of  text,
    duplicate_night text,
    PRIMARY KEY (workflow_id, invoice_no)
);
CREATE INDEX invoice_fingerprints_supplier ON invoice_fingerprints (supplier_id, fingerprint);

-- A redo after an undo weighs its scope again (steps 4-6) once per generation: a retried or reset
-- redo finds its row and posts what that weighing found.
CREATE TABLE reweighings (
    workflow_id text    NOT NULL,
    scope       text    NOT NULL,  -- a supplier id, or '' for the whole night
    generation  integer NOT NULL,
    weighed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_id, scope, generation)
);

-- Nights reconciled before this migration: what they accepted, so that a later night subtracts
-- it. Before, a night credited each matched line with its PO line's received quantity and booked
-- that into stock, so that is what it accepted; it is live while that stock movement is. Idempotent
-- (a line already there is skipped); called once here, on the upgrade.
CREATE FUNCTION recon_backfill_acceptances() RETURNS bigint LANGUAGE sql AS $$
    WITH old AS (
        INSERT INTO acceptances (workflow_id, invoice_no, line_no, warehouse, business_date,
                                 supplier_id, po_number, sku, qty_accepted, live)
        SELECT c.workflow_id, c.invoice_no, c.line_no,
               substring(c.workflow_id from '^recon-\d{4}-\d{2}-\d{2}-(.+)$'),
               substring(c.workflow_id from '^recon-(\d{4}-\d{2}-\d{2})-')::date,
               c.supplier_id, m.po_number, c.sku, greatest(c.received_qty, 0),
               EXISTS (SELECT 1 FROM live_stock_movements s
                       WHERE s.workflow_id = c.workflow_id AND s.invoice_no = c.invoice_no
                         AND s.line_no = c.line_no)
        FROM comparisons c
        JOIN line_matches m ON m.workflow_id = c.workflow_id AND m.invoice_no = c.invoice_no
                           AND m.line_no = c.line_no
        WHERE c.workflow_id ~ '^recon-\d{4}-\d{2}-\d{2}-.+$'
          AND NOT EXISTS (SELECT 1 FROM acceptances a WHERE a.workflow_id = c.workflow_id
                          AND a.invoice_no = c.invoice_no AND a.line_no = c.line_no)
        ON CONFLICT DO NOTHING
        RETURNING 1
    )
    SELECT count(*) FROM old
$$;
SELECT recon_backfill_acceptances();
