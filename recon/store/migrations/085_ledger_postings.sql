-- Each ledger entry's state in the outside ledger (RECON_LEDGER=tryton|http): the outbox of the
-- books. `ledger_entries` stays the record of what must be posted; a row here says where that
-- entry is in the other system: waiting (not there yet, as far as recon knows), posted (there,
-- with its id), verified (found there once, amount equal, by step 7's closing check), failed
-- (refused, with the ledger's own words; posted again once the ledger takes it).
CREATE TABLE ledger_postings (
    reference   text PRIMARY KEY REFERENCES ledger_entries (reference),
    workflow_id text NOT NULL,
    ledger      text NOT NULL,
    outside_id  text,
    state       text NOT NULL DEFAULT 'waiting'
                CHECK (state IN ('waiting', 'posted', 'verified', 'failed')),
    words       text NOT NULL DEFAULT '',
    attempts    integer NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_postings_run ON ledger_postings (workflow_id, state);
