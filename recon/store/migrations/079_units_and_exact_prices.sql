-- Units of measure and exact prices (issue 37 items 2 and 3; docs/master-data.md, docs/books.md).
--
-- A PO line has a unit (a canonical UN/ECE Rec 20 code, recon/domain/units.py; pieces unless the
-- orders file says otherwise). An invoice line keeps the unit its document states; step 3
-- restates a line billed in another unit in its PO line's unit (quantity and price) and keeps
-- what the document said in `billed_as`.
--
-- Prices: the integer `*_price_paise` columns stay what they were (the price to the paisa, half
-- up: what evidence, totals and outside checks read). Beside each, `*_price_exact` holds the
-- price in paise with every decimal the document (or the orders file) states, NULL when it is
-- that whole number of paise: every row written before this migration, and every seeded one.
-- Steps 5-6 compare and claim on `coalesce(exact, paise)` and round each amount once.
ALTER TABLE po_lines ADD COLUMN IF NOT EXISTS unit text NOT NULL DEFAULT 'C62';
ALTER TABLE po_lines ADD COLUMN IF NOT EXISTS price_exact numeric;
ALTER TABLE invoice_lines ADD COLUMN IF NOT EXISTS unit text;
ALTER TABLE invoice_lines ADD COLUMN IF NOT EXISTS price_exact numeric;
ALTER TABLE invoice_lines ADD COLUMN IF NOT EXISTS billed_as text;
ALTER TABLE line_matches ADD COLUMN IF NOT EXISTS po_price_exact numeric;
ALTER TABLE comparisons ADD COLUMN IF NOT EXISTS invoice_price_exact numeric;
ALTER TABLE comparisons ADD COLUMN IF NOT EXISTS po_price_exact numeric;
ALTER TABLE held_lines ADD COLUMN IF NOT EXISTS price_exact numeric;

-- A supplier's packing per SKU (`recon load conversions unit_conversions.csv`): one `unit` of
-- the SKU holds `per` of `base_unit`. Both codes canonical.
CREATE TABLE IF NOT EXISTS unit_conversions (
    supplier_id text NOT NULL REFERENCES suppliers (supplier_id),
    sku text NOT NULL,
    unit text NOT NULL,
    per numeric NOT NULL CHECK (per > 0),
    base_unit text NOT NULL CHECK (base_unit <> unit),
    PRIMARY KEY (supplier_id, sku, unit)
);

-- The working tables' new columns sample small, as the others do (migration 070).
ALTER TABLE invoice_lines ALTER COLUMN unit SET STATISTICS 10;
ALTER TABLE invoice_lines ALTER COLUMN price_exact SET STATISTICS 10;
ALTER TABLE invoice_lines ALTER COLUMN billed_as SET STATISTICS 10;
ALTER TABLE line_matches ALTER COLUMN po_price_exact SET STATISTICS 10;
ALTER TABLE comparisons ALTER COLUMN invoice_price_exact SET STATISTICS 10;
ALTER TABLE comparisons ALTER COLUMN po_price_exact SET STATISTICS 10;
ALTER TABLE held_lines ALTER COLUMN price_exact SET STATISTICS 10;
