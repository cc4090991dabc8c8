-- The working tables' statistics from the smallest sample (docs/design.md §8, "Statistics that
-- cost the same every night"). Migration 070 set every column to 10: ANALYZE then reads 3,000
-- pages, so its cost still grew over the first nights of a database, until each table passed
-- 3,000 pages (a 10k night adds ~350 to each): 50-75 ms a table on a month of 10k nights against
-- a few ms on the first night, a dozen tables a night, the last of thirty nights ~15 % dearer
-- than the first for that alone. At 1 it reads 300 pages, about one 10k night's worth, so a night
-- costs the same from the second night on. What the plans need stays estimated: a night's workflow
-- id holds a share of the sample (the night just filled is the most common value of its table, or
-- one of many alike), and the row count is the table's. tests/store/test_working_statistics.py
-- checks both, and names any column added later without the setting.
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
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS 1', c.tab, c.attname);
    END LOOP;
END
$$;
