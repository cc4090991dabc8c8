-- Passkeys as approvers' keys (issue 46, docs/desk.md). An approver may hold an Ed25519 key, a
-- passkey, or both: a passkey-only approver has no Ed25519 key on record.
ALTER TABLE approvers ALTER COLUMN public_key DROP NOT NULL;

-- One row per registered WebAuthn credential. `public_key` is the COSE key as the authenticator
-- gave it (what `webauthn.verify_authentication_response` takes); `sign_count` only grows: an
-- assertion whose counter does not (when either is non-zero) comes from a cloned authenticator.
CREATE TABLE approver_passkeys (
    credential_id bytea PRIMARY KEY CHECK (length(credential_id) BETWEEN 1 AND 1023),
    approver      text NOT NULL REFERENCES approvers (name),
    public_key    bytea NOT NULL CHECK (length(public_key) BETWEEN 1 AND 2048),
    sign_count    bigint NOT NULL DEFAULT 0 CHECK (sign_count >= 0),
    transports    text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz
);
CREATE INDEX approver_passkeys_of ON approver_passkeys (approver);

-- One-time enrollment links (`recon approvers add NAME --passkey`): only the SHA-256 of the token
-- is kept; a token registers one passkey, once, before it expires.
CREATE TABLE passkey_enrollments (
    token_sha256 bytea PRIMARY KEY CHECK (length(token_sha256) = 32),
    approver     text NOT NULL REFERENCES approvers (name),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz,
    CHECK (expires_at > created_at)
);

-- The evidence of every passkey-signed decision the check verified: with the canonical bytes it
-- signed (their SHA-256 is the challenge), anyone can verify it again later with the credential's
-- public key alone (bench/verify_desk_decision.py). Keyed like spent_signatures, by the SHA-256
-- of the signature's bytes, so a retried check finds its row instead of advancing the counter.
CREATE TABLE passkey_assertions (
    signature_sha256   bytea PRIMARY KEY CHECK (length(signature_sha256) = 32),
    credential_id      bytea NOT NULL REFERENCES approver_passkeys (credential_id),
    approver           text NOT NULL REFERENCES approvers (name),
    canonical          bytea NOT NULL,
    authenticator_data bytea NOT NULL,
    client_data_json   bytea NOT NULL,
    signature          bytea NOT NULL,
    sign_count         bigint NOT NULL,
    verified_at        timestamptz NOT NULL DEFAULT now()
);
