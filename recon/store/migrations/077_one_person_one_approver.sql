-- Four eyes means two people (docs/decisions.md, "Four eyes"): two active approvers may not share
-- an e-mail address (compared case-insensitively, spaces around it ignored). An admin could
-- otherwise register a second approver under their own address with a new key and confirm
-- their own decision.
--
-- Existing data: where active approvers already share an address, the one added first stays
-- active (an admin before an approver, so the last admin is never the one revoked) and every
-- later one is revoked now, keeping its row (decisions on record still name it). Nothing is
-- deleted; `recon approvers list` shows them revoked, and a person who is really someone else is
-- added again under their own address.
WITH ranked AS (
    SELECT name, row_number() OVER (
               PARTITION BY lower(btrim(email))
               ORDER BY (role = 'admin') DESC, added_at, name) AS n
    FROM approvers WHERE active
)
UPDATE approvers a SET active = false, revoked_at = now()
FROM ranked r WHERE a.name = r.name AND r.n > 1;

CREATE UNIQUE INDEX approvers_one_active_per_email ON approvers (lower(btrim(email))) WHERE active;
