-- Redo after undo, and "done" meaning "live".
--
-- An undo reverses entries; it never deletes them. A redo must post the night's entries again,
-- once, under keys that cannot collide with the undone ones. Each undo execution raises the run's
-- generation (one row per undo execution, so a retried undo raises it once); the keys of a
-- generation above 1 carry it as a suffix (`{key}:g{n}`). Generation 1 keeps the original shapes.

CREATE TABLE run_generations (
    workflow_id text NOT NULL,
    raised_by   text NOT NULL,  -- the undo execution (its Temporal run id) that raised it
    raised_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_id, raised_by)
);

-- The generation new entries of a run are posted under: 1 + how many undos the run has seen.
CREATE FUNCTION recon_generation(wf text) RETURNS integer LANGUAGE sql STABLE AS
$$ SELECT 1 + count(*)::integer FROM run_generations WHERE workflow_id = wf $$;

-- The one key shape per generation (recon/keys.py `generation_key` is the same rule in Python;
-- a unit test holds the two together).
CREATE FUNCTION recon_key(base text, generation integer) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN generation <= 1 THEN base ELSE base || ':g' || generation END $$;

-- Live = posted and not reversed. Verification, the gate, the summary and status count these.
CREATE VIEW live_ledger_entries AS
SELECT l.* FROM ledger_entries l
WHERE l.kind <> 'reversal'
  AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference);

CREATE VIEW live_stock_movements AS
SELECT m.* FROM stock_movements m
WHERE m.reverses IS NULL
  AND NOT EXISTS (SELECT 1 FROM stock_movements r WHERE r.reverses = m.key);

-- A debit note is live until a whole withdrawal (`undo:{key}`) follows it.
CREATE VIEW live_debit_notes AS
SELECT o.* FROM outbox o
WHERE o.kind = 'debit-note'
  AND NOT EXISTS (SELECT 1 FROM outbox w WHERE w.key = 'undo:' || o.key);

-- Invoices a person chose to go on without (a decision with --park) are left out of every
-- business write consistently: ledger, stock and notes.
CREATE VIEW open_mismatches AS
SELECT m.* FROM mismatches m
WHERE NOT EXISTS (SELECT 1 FROM parked_items p
                  WHERE p.workflow_id = m.workflow_id AND p.invoice_no = m.invoice_no
                    AND p.line_no IS NULL);

CREATE VIEW open_comparisons AS
SELECT c.* FROM comparisons c
WHERE NOT EXISTS (SELECT 1 FROM parked_items p
                  WHERE p.workflow_id = c.workflow_id AND p.invoice_no = c.invoice_no
                    AND p.line_no IS NULL);

-- A decision may park named invoices; the handover row keeps which.
ALTER TABLE handovers ADD COLUMN parked_invoices text[] NOT NULL DEFAULT '{}';
