-- The model bill: one model_calls row per request, written and committed BEFORE the request is
-- sent, so a request that dies with its worker is still on record. `outcome` says how it ended:
--   sent      the request is (or was) in flight; nobody has seen its end yet
--   answered  the server answered (200); token usage and the answer are on the row
--   error     the server or the network failed it; status code (if any) and message kept
--   cancelled the attempt was cancelled while the request was in flight
--   lost      the attempt died before storing the answer; marked by the next attempt
-- Rows written before this migration were all answered (a row was written only with an answer).
ALTER TABLE model_calls
    ADD COLUMN outcome text NOT NULL DEFAULT 'answered'
        CHECK (outcome IN ('sent', 'answered', 'error', 'cancelled', 'lost')),
    ADD COLUMN status_code       integer,
    ADD COLUMN error             text,
    ADD COLUMN prompt_tokens     integer,
    ADD COLUMN completion_tokens integer,
    -- USD per million tokens, as configured when the request was sent: the bill does not change
    -- when the configuration does.
    ADD COLUMN price_in_usd      numeric,
    ADD COLUMN price_out_usd     numeric,
    ADD COLUMN attempt           text,
    ADD COLUMN settled_at        timestamptz;

CREATE INDEX model_calls_in_flight ON model_calls (workflow_id, invoice_no) WHERE outcome = 'sent';
