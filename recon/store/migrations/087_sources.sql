-- Where a warehouse's night fetches from (docs/sources.md, `recon source add`): an IMAP folder, a
-- drop folder, or an ERP's export folder, configured once. The secret itself is never stored:
-- `secret_ref` names where the worker reads it at fetch time (`file:/path` or `env:NAME`).
CREATE TABLE sources (
    id          bigserial   PRIMARY KEY,
    warehouse   text        NOT NULL CHECK (warehouse ~ '^[a-z0-9][a-z0-9_-]{0,31}$'),
    kind        text        NOT NULL CHECK (kind IN ('imap', 'folder', 'erp')),
    url         text        NOT NULL,
    settings    jsonb       NOT NULL DEFAULT '{}'::jsonb,
    secret_ref  text        CHECK (secret_ref IS NULL OR secret_ref ~ '^(file|env):.+$'),
    added_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (warehouse, url)
);
