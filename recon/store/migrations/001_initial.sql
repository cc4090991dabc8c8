-- recon schema. Idempotency lives here: every outside effect has a primary key derived from the
-- workflow id, so a second write of the same action is refused by Postgres, not by our code.

-- ---------------------------------------------------------------- master data (the business)
CREATE TABLE suppliers (
    supplier_id text PRIMARY KEY,
    name        text NOT NULL,
    email       text NOT NULL
);

CREATE TABLE purchase_orders (
    po_number   text PRIMARY KEY,
    supplier_id text NOT NULL REFERENCES suppliers,
    warehouse   text NOT NULL,
    ordered_on  date NOT NULL
);

CREATE TABLE po_lines (
    po_number        text   NOT NULL REFERENCES purchase_orders,
    sku              text   NOT NULL,
    description      text   NOT NULL,
    qty_ordered      integer NOT NULL CHECK (qty_ordered > 0),
    unit_price_paise bigint NOT NULL CHECK (unit_price_paise >= 0),
    PRIMARY KEY (po_number, sku)
);

CREATE TABLE goods_receipts (
    receipt_id   bigserial PRIMARY KEY,
    po_number    text    NOT NULL REFERENCES purchase_orders,
    sku          text    NOT NULL,
    warehouse    text    NOT NULL,
    qty_received integer NOT NULL CHECK (qty_received >= 0),
    received_on  date    NOT NULL
);
CREATE INDEX goods_receipts_po ON goods_receipts (po_number, sku);

-- The source inbox: invoice documents as suppliers sent them (text, several layouts).
CREATE TABLE invoices (
    invoice_no    text PRIMARY KEY,
    supplier_id   text NOT NULL REFERENCES suppliers,
    business_date date NOT NULL,
    warehouse     text NOT NULL,
    document      text NOT NULL,
    source        text NOT NULL DEFAULT 'seed'
);
CREATE INDEX invoices_night ON invoices (business_date, warehouse);

CREATE TABLE stock_levels (
    warehouse    text   NOT NULL,
    sku          text   NOT NULL,
    qty_on_hand  bigint NOT NULL,
    PRIMARY KEY (warehouse, sku)
);

-- ---------------------------------------------------------------- outside effects (checked by audits)
CREATE TABLE ledger_entries (
    reference    text PRIMARY KEY,
    workflow_id  text   NOT NULL,
    invoice_no   text   NOT NULL,
    supplier_id  text   NOT NULL,
    line_no      integer,
    kind         text   NOT NULL CHECK (kind IN ('qty', 'price', 'reversal')),
    amount_paise bigint NOT NULL,
    reverses     text REFERENCES ledger_entries (reference),
    memo         text   NOT NULL DEFAULT '',
    fence_token  bigint,
    posted_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_run ON ledger_entries (workflow_id);
CREATE UNIQUE INDEX ledger_entries_one_reversal ON ledger_entries (reverses) WHERE reverses IS NOT NULL;

CREATE TABLE stock_movements (
    key         text PRIMARY KEY,
    workflow_id text    NOT NULL,
    warehouse   text    NOT NULL,
    sku         text    NOT NULL,
    qty         integer NOT NULL,
    supplier_id text    NOT NULL,
    invoice_no  text    NOT NULL,
    line_no     integer,
    note        text    NOT NULL DEFAULT '',
    reverses    text REFERENCES stock_movements (key),
    fence_token bigint,
    moved_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stock_movements_run ON stock_movements (workflow_id);
CREATE UNIQUE INDEX stock_movements_one_reversal ON stock_movements (reverses) WHERE reverses IS NOT NULL;

-- Messages leave through the outbox: the row is the promise, a sender delivers it later.
CREATE TABLE outbox (
    key         text PRIMARY KEY,
    workflow_id text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('debit-note', 'summary', 'withdrawal', 'handover', 'reminder')),
    supplier_id text,
    recipient   text NOT NULL,
    subject     text NOT NULL,
    body        text NOT NULL,
    amount_paise bigint,
    reverses    text REFERENCES outbox (key),
    fence_token bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz,
    attempts    integer NOT NULL DEFAULT 0
);
CREATE INDEX outbox_run ON outbox (workflow_id);
CREATE INDEX outbox_unsent ON outbox (created_at) WHERE sent_at IS NULL;

-- One row per request actually sent to a model (or to the offline extractor), answer verbatim.
CREATE TABLE model_calls (
    id          bigserial PRIMARY KEY,
    workflow_id text NOT NULL,
    invoice_no  text NOT NULL,
    extractor   text NOT NULL,
    model       text NOT NULL,
    request     text NOT NULL,
    response    text NOT NULL,
    called_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX model_calls_run ON model_calls (workflow_id);

-- One row per invoice document read from the source.
CREATE TABLE invoice_reads (
    id          bigserial PRIMARY KEY,
    workflow_id text NOT NULL,
    invoice_no  text NOT NULL,
    read_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX invoice_reads_run ON invoice_reads (workflow_id);

-- ---------------------------------------------------------------- the run's working set (bulk data
-- lives here, keyed by workflow id, so Temporal's history only carries ids and counts)
CREATE TABLE run_invoices (
    workflow_id text    NOT NULL,
    invoice_no  text    NOT NULL,
    seq         integer NOT NULL,
    supplier_id text    NOT NULL,
    document    text    NOT NULL,
    PRIMARY KEY (workflow_id, invoice_no),
    UNIQUE (workflow_id, seq)
);

CREATE TABLE extractions (
    workflow_id   text   NOT NULL,
    invoice_no    text   NOT NULL,
    model_call_id bigint NOT NULL REFERENCES model_calls,
    po_number     text,
    line_count    integer NOT NULL,
    PRIMARY KEY (workflow_id, invoice_no)
);

CREATE TABLE invoice_lines (
    workflow_id      text    NOT NULL,
    invoice_no       text    NOT NULL,
    line_no          integer NOT NULL,
    supplier_id      text    NOT NULL,
    po_number        text,
    sku              text    NOT NULL,
    description      text    NOT NULL,
    qty              integer NOT NULL,
    unit_price_paise bigint  NOT NULL,
    PRIMARY KEY (workflow_id, invoice_no, line_no)
);

CREATE TABLE line_matches (
    workflow_id   text    NOT NULL,
    invoice_no    text    NOT NULL,
    line_no       integer NOT NULL,
    po_number     text    NOT NULL,
    sku           text    NOT NULL,
    po_price_paise bigint NOT NULL,
    PRIMARY KEY (workflow_id, invoice_no, line_no)
);

-- Step 4's snapshot is taken once per run and reused on resume: stock keeps moving during the night.
CREATE TABLE stock_snapshots (
    workflow_id  text    NOT NULL,
    po_number    text    NOT NULL,
    sku          text    NOT NULL,
    qty_received integer NOT NULL,
    PRIMARY KEY (workflow_id, po_number, sku)
);
CREATE TABLE stock_snapshot_taken (
    workflow_id text PRIMARY KEY,
    lines       integer NOT NULL,
    taken_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE comparisons (
    workflow_id        text    NOT NULL,
    seq                integer NOT NULL,
    invoice_no         text    NOT NULL,
    line_no            integer NOT NULL,
    supplier_id        text    NOT NULL,
    sku                text    NOT NULL,
    invoiced_qty       integer NOT NULL,
    received_qty       integer NOT NULL,
    invoice_price_paise bigint NOT NULL,
    po_price_paise     bigint  NOT NULL,
    PRIMARY KEY (workflow_id, invoice_no, line_no),
    UNIQUE (workflow_id, seq)
);

CREATE TABLE mismatches (
    workflow_id  text    NOT NULL,
    seq          integer NOT NULL,
    reference    text    NOT NULL UNIQUE,
    invoice_no   text    NOT NULL,
    line_no      integer NOT NULL,
    supplier_id  text    NOT NULL,
    kind         text    NOT NULL CHECK (kind IN ('qty', 'price')),
    amount_paise bigint  NOT NULL,
    detail       text    NOT NULL,
    PRIMARY KEY (workflow_id, seq)
);

CREATE TABLE parked_items (
    workflow_id text NOT NULL,
    item_key    text NOT NULL,
    step        text NOT NULL,
    invoice_no  text NOT NULL,
    line_no     integer,
    reason      text NOT NULL,
    evidence    text NOT NULL DEFAULT '',
    parked_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_id, item_key)
);

-- Fencing: the highest token handed out per scope. A write carrying a lower token is refused in
-- the same transaction, so a worker that wakes up after its work was handed over writes nothing.
CREATE TABLE fences (
    scope text PRIMARY KEY,
    token bigint NOT NULL
);
