-- Approvers: the people whose signed decisions a run takes (docs/design.md §3, "Signed
-- decisions"). A decision is taken only when its Ed25519 signature verifies against the public
-- key on record here for the name it carries, and the approver is active. Nothing is deleted: a
-- revoked approver keeps its row (decisions on record still name it), with the time it ended.
CREATE TABLE approvers (
    name        text    PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$'),
    email       text    NOT NULL CHECK (length(email) BETWEEN 3 AND 254 AND email LIKE '%_@_%'
                                        AND email !~ '[[:cntrl:][:space:]]'),
    role        text    NOT NULL CHECK (role IN ('approver', 'admin')),
    public_key  bytea   NOT NULL UNIQUE CHECK (length(public_key) = 32),
    -- the most money one decision of this approver may put at stake; NULL: no limit
    limit_paise bigint  CHECK (limit_paise >= 0),
    active      boolean NOT NULL DEFAULT true,
    added_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz,
    CHECK (active = (revoked_at IS NULL))
);

-- Every decision the signature check refused, with who tried: the name it carried, and the key's
-- owner when the signature verified (a revoked or over-limit approver). The run keeps waiting.
CREATE TABLE refused_decisions (
    check_id     text PRIMARY KEY,  -- one per arrival: a retried check records it once
    workflow_id  text NOT NULL,
    handover_no  integer NOT NULL,
    via          text NOT NULL CHECK (via IN ('update', 'signal')),
    tried_by     text NOT NULL,     -- as it came (bounded by the workflow's validator)
    signer       text REFERENCES approvers (name),  -- NULL: no valid signature of a known key
    decision     text NOT NULL,
    park         text[] NOT NULL DEFAULT '{}',
    stake_paise  bigint,
    reason       text NOT NULL,
    received_at  timestamptz NOT NULL,
    recorded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refused_decisions_of_run ON refused_decisions (workflow_id, handover_no);

-- Four eyes: the second approver of a decision, when one was needed; `decided_by` is the first.
ALTER TABLE handovers ADD COLUMN confirmed_by text;
ALTER TABLE handovers ADD CONSTRAINT handovers_two_different_approvers
    CHECK (confirmed_by IS NULL OR confirmed_by <> decided_by);
