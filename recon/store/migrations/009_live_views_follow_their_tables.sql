-- A view's `o.*` is expanded when the view is made: the live views of migration 003 predate the
-- delivery columns migration 005 added to the outbox. Made again here, they carry every column;
-- a later migration that adds columns to these tables must make its views again the same way.
CREATE OR REPLACE VIEW live_ledger_entries AS
SELECT l.* FROM ledger_entries l
WHERE l.kind <> 'reversal'
  AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference);

CREATE OR REPLACE VIEW live_stock_movements AS
SELECT m.* FROM stock_movements m
WHERE m.reverses IS NULL
  AND NOT EXISTS (SELECT 1 FROM stock_movements r WHERE r.reverses = m.key);

CREATE OR REPLACE VIEW live_debit_notes AS
SELECT o.* FROM outbox o
WHERE o.kind = 'debit-note'
  AND NOT EXISTS (SELECT 1 FROM outbox w WHERE w.key = 'undo:' || o.key);
