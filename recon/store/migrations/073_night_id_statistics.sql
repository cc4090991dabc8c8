-- The workflow id of the working tables keeps one most common value at most (statistics target
-- 1; the table's sample stays 3,000 rows, set by its other columns at 10). docs/design.md §8,
-- "Statistics refreshed only when the planner is wrong".
--
-- A night's steps ask the planner how many rows it expects for the night before they ANALYZE
-- what they filled (recon/store/statistics.py), and skip the ANALYZE when it already knows. At
-- target 10, the first ten nights all fit in the list of most common values, whose frequencies
-- add up to the whole table: a night the statistics have not seen is then expected to hold one
-- row, so every night refreshed until the eleventh, each refresh costlier than the last (3,000
-- pages, read from disk once the history outgrows Postgres's buffers: a 20k night went from 3.4 s
-- to 4.7 s over eight nights). With one value at most, the rest of the table is spread evenly
-- over the other nights, so from the third night on a new night is expected to hold what the
-- nights before held, and the refresh is skipped when it does.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['run_invoices', 'invoice_lines', 'extractions', 'line_matches',
                             'stock_snapshots', 'comparisons', 'mismatches', 'ledger_entries',
                             'stock_movements', 'parked_items', 'acceptances', 'held_lines',
                             'invoice_fingerprints']
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN workflow_id SET STATISTICS 1', t);
    END LOOP;
END
$$;
