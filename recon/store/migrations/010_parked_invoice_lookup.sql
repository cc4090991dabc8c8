-- The open_mismatches / open_comparisons views ask, for every row of a night, whether its invoice
-- is parked whole: an index on exactly that question keeps a 250k-line night's stock booking and
-- verification from scanning the night's parked items again and again.
CREATE INDEX parked_items_whole_invoice ON parked_items (workflow_id, invoice_no)
    WHERE line_no IS NULL;
