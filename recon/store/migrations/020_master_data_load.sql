-- Master data in (`recon load suppliers|orders|receipts`): the ids an ERP export carries.
--
-- Suppliers may carry their GSTIN (the document importer can find a supplier by it). One GSTIN is
-- one supplier. Written idempotently: another migration may add the same column and index.
ALTER TABLE suppliers ADD COLUMN IF NOT EXISTS gstin text;
CREATE UNIQUE INDEX IF NOT EXISTS suppliers_gstin ON suppliers (gstin);
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'suppliers_gstin_shape') THEN
        ALTER TABLE suppliers ADD CONSTRAINT suppliers_gstin_shape
            CHECK (gstin ~ '^[0-9]{2}[A-Z]{5}[0-9]{4}[A-Z][1-9A-Z]Z[0-9A-Z]$');
    END IF;
END
$$;

-- A goods receipt keeps its own number from the ERP (`receipt_id` in the file). Rows the seed
-- writes have none; a loaded receipt has exactly one, and a number is loaded once.
ALTER TABLE goods_receipts ADD COLUMN IF NOT EXISTS receipt_ref text;
CREATE UNIQUE INDEX IF NOT EXISTS goods_receipts_ref ON goods_receipts (receipt_ref);
