-- Planner statistics of the working tables from a small sample (docs/design.md §8, "Statistics
-- that cost the same every night"). The night's steps ANALYZE the tables they have just filled
-- (recon/store/statistics.py): what the plans need is how many rows the night's workflow id has.
-- ANALYZE samples 300 x the largest statistics target of a table's columns, one page per sampled
-- row: at the default (100) that is 30,000 pages, so its cost grew with the history until a table
-- passed 30,000 pages (0.3-0.45 s a table on a month of 10k nights, eight tables a night). At 10
-- it reads 3,000 pages (~0.05 s), and the most common workflow ids and the row count stay
-- estimated as well as the plans need. A column added to one of these tables later takes the
-- default again: tests/store/test_working_statistics.py says so.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT a.attrelid::regclass AS tab, a.attname
        FROM pg_attribute a
        WHERE a.attrelid IN ('run_invoices'::regclass, 'invoice_lines'::regclass,
                             'extractions'::regclass, 'line_matches'::regclass,
                             'stock_snapshots'::regclass, 'comparisons'::regclass,
                             'mismatches'::regclass, 'ledger_entries'::regclass,
                             'stock_movements'::regclass, 'parked_items'::regclass,
                             'acceptances'::regclass, 'held_lines'::regclass,
                             'invoice_fingerprints'::regclass)
          AND a.attnum > 0 AND NOT a.attisdropped
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS 10', c.tab, c.attname);
    END LOOP;
END
$$;
