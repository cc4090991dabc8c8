-- Step 3's mark of completion (recon/store/matching.py): a large night matches its upper half of
-- PO numbers on a second connection, committed on its own, so "the run has matches" no longer
-- means "step 3 is done". The mark commits in the step's own transaction with the rest of its
-- matches, its parked lines and its carried lines.
CREATE TABLE lines_matched (
    workflow_id text PRIMARY KEY,
    lines       integer NOT NULL,
    matched_at  timestamptz NOT NULL DEFAULT now()
);

-- Every run matched before this migration matched in one transaction: its matches are whole.
INSERT INTO lines_matched (workflow_id, lines)
SELECT workflow_id, count(*) FROM line_matches GROUP BY workflow_id;
