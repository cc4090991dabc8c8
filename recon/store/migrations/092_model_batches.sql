-- Batch mode of step 2 (RECON_MODEL_MODE=batch, docs/model-calls.md "Batch mode"): the night's
-- model-bound invoices go to the provider's batch interface, one batch per group.
--
-- `model_batches`: one row per group, written (with its requests' `model_calls` rows) before
-- anything is uploaded, so every attempt sends the same group; then the uploaded file, the moment
-- a create was first tried (an attempt that finds it set may have created the batch: it looks the
-- batch up by its metadata before creating one), the provider's batch id (unique: one batch per
-- group), the progress last seen, the deadline, and when its files were read (once).
CREATE TABLE model_batches (
    key               text PRIMARY KEY,  -- {workflow_id}:g{generation}:b{group}
    workflow_id       text NOT NULL,
    generation        integer NOT NULL,
    group_no          integer NOT NULL,
    requests          integer NOT NULL,
    input_name        text NOT NULL,     -- the uploaded file's name: found again by it
    input_file_id     text,
    create_started_at timestamptz,
    batch_id          text UNIQUE,
    status            text NOT NULL DEFAULT 'planned',
    answered          integer NOT NULL DEFAULT 0,
    failed            integer NOT NULL DEFAULT 0,
    output_file_id    text,
    error_file_id     text,
    deadline_at       timestamptz,
    cancel_asked_at   timestamptz,
    read_at           timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workflow_id, generation, group_no)
);

-- A request sent in a batch: outcome `batched` until its batch's files are read, and the batch's
-- key. One row per invoice per batch: reading the files again settles each row once.
ALTER TABLE model_calls DROP CONSTRAINT model_calls_outcome_check;
ALTER TABLE model_calls
    ADD CONSTRAINT model_calls_outcome_check
        CHECK (outcome IN ('sent', 'answered', 'error', 'cancelled', 'lost', 'batched')),
    ADD COLUMN batch_key text REFERENCES model_batches (key);
CREATE UNIQUE INDEX model_calls_one_per_batch ON model_calls (batch_key, invoice_no)
    WHERE batch_key IS NOT NULL;
