-- Tax (docs/books.md "Tax"): each invoice line keeps the tax its document states; a PO line may
-- state the rate it was ordered at; a billed rate that differs is a mismatch of its own kind
-- (`tax`); a claim and its ledger entry carry their taxable part and each tax part, with
-- `amount_paise` their total. Every new column is nullable: a line, claim or entry without tax
-- is exactly what it was before (its parts NULL, its amount the taxable amount).

ALTER TABLE invoice_lines
    ADD COLUMN hsn text,
    ADD COLUMN tax_category text,
    ADD COLUMN tax_rate numeric(7, 4),
    ADD COLUMN tax_split text CHECK (tax_split IN ('cgst+sgst', 'igst', 'vat')),
    ADD COLUMN taxable_paise bigint,
    ADD COLUMN cgst_paise bigint,
    ADD COLUMN sgst_paise bigint,
    ADD COLUMN igst_paise bigint,
    ADD COLUMN cess_paise bigint;

ALTER TABLE po_lines ADD COLUMN tax_rate numeric(7, 4) CHECK (tax_rate BETWEEN 0 AND 100);

ALTER TABLE mismatches DROP CONSTRAINT mismatches_kind_check;
ALTER TABLE mismatches ADD CONSTRAINT mismatches_kind_check
    CHECK (kind IN ('qty', 'price', 'tax'));
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_kind_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_kind_check
    CHECK (kind IN ('qty', 'price', 'tax', 'reversal'));

-- The parts of a claim. `taxable_paise` NULL: a claim without tax (amount_paise is all of it).
ALTER TABLE mismatches
    ADD COLUMN taxable_paise bigint,
    ADD COLUMN cgst_paise bigint,
    ADD COLUMN sgst_paise bigint,
    ADD COLUMN igst_paise bigint,
    ADD COLUMN cess_paise bigint,
    ADD COLUMN vat_paise bigint,
    ADD COLUMN tax_rate numeric(7, 4),
    ADD COLUMN expected_tax_rate numeric(7, 4);

ALTER TABLE ledger_entries
    ADD COLUMN taxable_paise bigint,
    ADD COLUMN cgst_paise bigint,
    ADD COLUMN sgst_paise bigint,
    ADD COLUMN igst_paise bigint,
    ADD COLUMN cess_paise bigint,
    ADD COLUMN vat_paise bigint,
    ADD CONSTRAINT ledger_entries_parts_make_the_amount CHECK (
        taxable_paise IS NULL
        OR amount_paise = taxable_paise + coalesce(cgst_paise, 0) + coalesce(sgst_paise, 0)
                          + coalesce(igst_paise, 0) + coalesce(cess_paise, 0)
                          + coalesce(vat_paise, 0));

-- The views over these tables take their new columns (as migration 009 did).
CREATE OR REPLACE VIEW open_mismatches AS
SELECT m.* FROM mismatches m
WHERE NOT EXISTS (SELECT 1 FROM parked_items p
                  WHERE p.workflow_id = m.workflow_id AND p.invoice_no = m.invoice_no
                    AND p.line_no IS NULL);

CREATE OR REPLACE VIEW live_ledger_entries AS
SELECT l.* FROM ledger_entries l
WHERE l.kind <> 'reversal'
  AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference);

-- The new columns sample small, as every column of a working table does (migration 070).
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT a.attrelid::regclass AS tab, a.attname
        FROM pg_attribute a
        WHERE a.attrelid IN ('invoice_lines'::regclass, 'mismatches'::regclass,
                             'ledger_entries'::regclass)
          AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attname IN ('hsn', 'tax_category', 'tax_rate', 'tax_split', 'taxable_paise',
                            'cgst_paise', 'sgst_paise', 'igst_paise', 'cess_paise', 'vat_paise',
                            'expected_tax_rate')
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS 10', c.tab, c.attname);
    END LOOP;
END
$$;
