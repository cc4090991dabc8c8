-- A bill's fingerprint is found by (supplier, first PO number, fingerprint) instead of (supplier,
-- fingerprint) (docs/design.md §12, "Speed"). Two bills with one fingerprint bill the same PO
-- lines, so they have the same first PO number: the duplicate check finds what it found before.
-- But the old index put each new fingerprint (an md5) at a random place among every bill ever
-- fingerprinted, one page read and written per bill (a 100k night on a month of history: 3.8 s
-- to insert 99k fingerprints); PO numbers are issued in sequence, so the new one puts a night's
-- bills beside each other at the end of each supplier's range.
ALTER TABLE invoice_fingerprints ADD COLUMN first_po text;
ALTER TABLE invoice_fingerprints ALTER COLUMN first_po SET STATISTICS 10;  -- as migration 070

-- Bills fingerprinted before this migration: their own lines are their night's lines of that
-- invoice (a carried line is never fingerprinted), so the first PO number is read from them,
-- '' for a bill citing none, as the fingerprint spells a missing one.
UPDATE invoice_fingerprints f
SET first_po = coalesce((SELECT min(coalesce(l.po_number, '')) FROM invoice_lines l
                         WHERE l.workflow_id = f.workflow_id AND l.invoice_no = f.invoice_no), '');

ALTER TABLE invoice_fingerprints ALTER COLUMN first_po SET NOT NULL;
CREATE INDEX invoice_fingerprints_by_order ON invoice_fingerprints (supplier_id, first_po, fingerprint);
DROP INDEX invoice_fingerprints_supplier;
