-- The statistics refresh's question for several working tables in one call (recon/store/
-- statistics.py): per table, the planner's estimate of a night's rows and their count. Asked one
-- table at a time it took two statements and a pooled connection per table, 13 tables a night:
-- ~40 of a 500-invoice night's ~600 statements. The estimate is the planner's for the night's id
-- as a constant (what the steps' own statements are planned with); the count is by the table's
-- index, as recon_night_rows counts (sequential scans off inside this function only). VOLATILE:
-- Postgres allows no EXPLAIN in a STABLE function.
CREATE FUNCTION recon_night_estimates(tabs text[], night text)
RETURNS TABLE (tab text, estimated double precision, actual bigint)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $$
DECLARE
    plan json;
BEGIN
    FOREACH tab IN ARRAY tabs LOOP
        EXECUTE format('EXPLAIN (FORMAT JSON) SELECT 1 FROM %I WHERE workflow_id = %L', tab, night)
            INTO plan;
        estimated := (plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision;
        EXECUTE format('SELECT count(*) FROM %I WHERE workflow_id = $1', tab) INTO actual
            USING night;
        RETURN NEXT;
    END LOOP;
END
$$;
