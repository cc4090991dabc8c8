-- A re-bill held awaiting receipt is a possible duplicate too (docs/design.md §12, "Possible
-- duplicates"). The weighing keeps the units a held line bills beyond its order, so the duplicate
-- check asks "has the order room for it?" of held lines as it does of claimed ones. A constant
-- default: no table rewrite.
ALTER TABLE held_lines ADD COLUMN beyond_order bigint NOT NULL DEFAULT 0;
ALTER TABLE held_lines ALTER COLUMN beyond_order SET STATISTICS 10;  -- as migration 070

-- The lines a night carried from earlier nights' holds are few; the duplicate check of the night
-- that claims them reads their bills' fingerprints under the night each bill came in, found here
-- without reading the night's other matches.
CREATE INDEX line_matches_carried ON line_matches (workflow_id) WHERE carried_from IS NOT NULL;
