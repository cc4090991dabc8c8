-- Every ledger amount carries its currency: the supplier's (`suppliers.currency`, migration 040)
-- when the entry is posted, and a reversal the currency of the entry it reverses. Amounts stay in
-- that currency's minor unit and are never converted; sums are taken per currency. Entries posted
-- before this migration are the supplier's currency as it is now (INR unless set).
ALTER TABLE ledger_entries ADD COLUMN IF NOT EXISTS currency text NOT NULL DEFAULT 'INR'
    CHECK (currency ~ '^[A-Z]{3}$');
UPDATE ledger_entries l SET currency = s.currency
FROM suppliers s
WHERE s.supplier_id = l.supplier_id AND s.currency <> 'INR' AND l.currency <> s.currency;

-- `l.*` is expanded when a view is made (migration 009): made again, it carries the new column.
CREATE OR REPLACE VIEW live_ledger_entries AS
SELECT l.* FROM ledger_entries l
WHERE l.kind <> 'reversal'
  AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference);

-- A working table's columns sample small (migration 070): the new one too.
ALTER TABLE ledger_entries ALTER COLUMN currency SET STATISTICS 10;
