-- Delivery of the outbox over SMTP (recon/mail/). A row is pending until the sender stamps
-- `sent_at` (the server accepted it) or `failed_at` (the server refused it for good, 5xx).
-- Temporary trouble (4xx, no connection) only moves `next_attempt_at` on, so nothing is lost
-- while the mail server is down for hours.
ALTER TABLE outbox
    ADD COLUMN body_html       text,
    ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN last_attempt_at timestamptz,
    ADD COLUMN last_error      text,
    ADD COLUMN failed_at       timestamptz,
    ADD COLUMN message_id      text;
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;

-- A queued row wakes the senders at once (LISTEN recon_outbox); they also poll slowly.
-- One notification per statement: a 500-row insert wakes them once.
CREATE FUNCTION outbox_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('recon_outbox', '');
    RETURN NULL;
END $$;
CREATE TRIGGER outbox_queued AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_queued();

-- A supplier-facing note the mail server refused for good is a handover of its own: the run's
-- ledger and stock stand (the run may long have finished), but a person must reach the supplier.
-- One open handover per message; answered with `recon mail resend` or `recon mail dismiss`.
CREATE TABLE mail_handovers (
    id            bigserial PRIMARY KEY,
    outbox_key    text NOT NULL REFERENCES outbox (key),
    workflow_id   text NOT NULL,
    reply         text NOT NULL,
    note          text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    decision      text CHECK (decision IN ('resend', 'dismiss')),
    decided_by    text,
    decision_note text,
    decided_at    timestamptz
);
CREATE UNIQUE INDEX mail_handovers_one_open ON mail_handovers (outbox_key) WHERE decision IS NULL;
CREATE INDEX mail_handovers_run ON mail_handovers (workflow_id);
