-- Signed requests (docs/design.md §3, "Signed requests"): undo, redo and the answers to a refused
-- mail are signed like decisions. A request the check refused is kept here with who tried and
-- why; nothing it asked for was done.
CREATE TABLE refused_requests (
    check_id     text PRIMARY KEY,  -- one per arrival: a retried check records it once
    purpose      text NOT NULL CHECK (purpose IN ('recon-undo/1', 'recon-redo/1',
                                                  'recon-mail-resend/1', 'recon-mail-dismiss/1')),
    run          text NOT NULL,     -- the night it would act on (a message's run, for mail)
    target       text NOT NULL,     -- the undo's or redo's workflow id, or the outbox key
    tried_by     text NOT NULL CHECK (length(tried_by) <= 64),   -- as it came, cut
    signer       text REFERENCES approvers (name),  -- NULL: no valid signature of a known key
    stake_paise  bigint,
    reason       text NOT NULL,
    received_at  timestamptz NOT NULL,
    recorded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX refused_requests_of_run ON refused_requests (run, received_at);

-- Every signature that was acted on, decisions and requests alike: a signature is good for one
-- use. The same signature again for the same target (a retry: the check activity run again, the
-- Update sent again) finds its row and is the same use; for any other target it is refused.
CREATE TABLE spent_signatures (
    signature_sha256 bytea PRIMARY KEY CHECK (length(signature_sha256) = 32),
    purpose          text NOT NULL,
    run              text NOT NULL,
    target           text NOT NULL,  -- workflow@execution#handover, workflow@execution, mail key#id
    signer           text NOT NULL REFERENCES approvers (name),
    used_at          timestamptz NOT NULL DEFAULT now()
);
