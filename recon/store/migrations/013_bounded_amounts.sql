-- Every amount a line can make fits a bigint: quantities at most 10,000,000 and unit prices at
-- most 100,000,000,000 paise (₹100 crore), so quantity x price <= 10^18 < 2^63 (the bounds of
-- recon.documents.extraction.schema.ExtractedLine, now held by Postgres too). Sums over lines
-- are numeric (a sum of bigint is), never cast back to bigint, so no night can overflow them.
-- NOT VALID: rows already stored are left as they are; every new row is checked.
ALTER TABLE invoice_lines
    ADD CONSTRAINT invoice_lines_qty_bounded CHECK (qty BETWEEN 1 AND 10000000) NOT VALID,
    ADD CONSTRAINT invoice_lines_price_bounded
        CHECK (unit_price_paise BETWEEN 0 AND 100000000000) NOT VALID;
ALTER TABLE po_lines
    ADD CONSTRAINT po_lines_qty_bounded CHECK (qty_ordered <= 10000000) NOT VALID,
    ADD CONSTRAINT po_lines_price_bounded CHECK (unit_price_paise <= 100000000000) NOT VALID;
ALTER TABLE goods_receipts
    ADD CONSTRAINT goods_receipts_qty_bounded CHECK (qty_received <= 10000000) NOT VALID;
