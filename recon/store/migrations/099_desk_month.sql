-- The desk's month page (recon/store/desk_month.py) sums, per night, two things that have a row
-- per invoice: the invoices each supplier billed (run_invoices, step 1) and the model bill
-- (model_calls, step 2). Once a night has matched its lines (lines_matched, step 3) neither
-- changes again (a redo starts at step 7), so the desk writes each night's sums once, the first
-- time a month page needs them, and a month is then read from a row per night and supplier
-- instead of a row per invoice.
CREATE TABLE desk_night_billing (
    workflow_id text    NOT NULL,
    supplier_id text    NOT NULL,
    invoices    integer NOT NULL,
    PRIMARY KEY (workflow_id, supplier_id)
);
CREATE TABLE desk_night_bills (
    workflow_id text PRIMARY KEY,
    requests    integer NOT NULL,  -- to a model
    local       integer NOT NULL,  -- documents read without one
    cost_usd    float8  NOT NULL   -- at the prices recorded on each request
);

-- The nights page counts each night's invoices and suppliers (recon/store/desk.py): index only.
CREATE INDEX run_invoices_suppliers ON run_invoices (workflow_id, supplier_id);
