-- Parking needs a mandate too (docs/design.md §3, "Mandates"): a parked invoice leaves the
-- ledger, the stock, the notes and the gate's weighing, so a caller that parks by name could
-- shrink what the gate weighs and then send honest-looking notes for the rest. A verified,
-- taken decision records the invoices it signed to leave out; `park_invoices` parks only those.
ALTER TABLE spent_signatures ADD COLUMN park text[] NOT NULL DEFAULT '{}';
