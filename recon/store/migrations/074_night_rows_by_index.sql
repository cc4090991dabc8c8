-- Whether a night has rows in a working table, found by the table's index on the workflow id and
-- never by reading the history (docs/design.md §8, "A night reads what it bills").
--
-- `EXISTS (SELECT 1 FROM t WHERE workflow_id = $1)` is planned as a sequential scan that stops at
-- the first match: the statistics say each night holds its share of the table, so a match is
-- expected within the first few dozen rows. The steps ask it exactly when the night has no rows
-- yet (has step 3 begun? step 5?), and then the scan reads every earlier night to say no: 19 ms
-- for `line_matches` and 34 ms for `acceptances` after seven 20k nights, growing by the night
-- without end. Sequential scans are off inside this function only (its own SET clause).
CREATE FUNCTION recon_night_has_rows(tab text, night text) RETURNS boolean
LANGUAGE plpgsql STABLE SET enable_seqscan = off AS $$
DECLARE
    found boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE workflow_id = $1)', tab)
        INTO found USING night;
    RETURN found;
END
$$;

-- How many rows a night has in a working table, counted by the same index: the statistics refresh
-- compares it with the planner's estimate (recon/store/statistics.py), and a count of one night
-- among a few was planned as a scan of them all (16-19 ms after seven 20k nights, growing).
CREATE FUNCTION recon_night_rows(tab text, night text) RETURNS bigint
LANGUAGE plpgsql STABLE SET enable_seqscan = off AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %I WHERE workflow_id = $1', tab) INTO n USING night;
    RETURN n;
END
$$;
