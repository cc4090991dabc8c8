-- What each night fetched from each source (recon/sources/fetch.py).
--
-- `source_marks`: one row per source per night, written by the night's first fetch and re-used by
-- every retry of it, so the night's set is fixed: what arrives after it belongs to the next night.
-- An IMAP folder's mark is its UIDVALIDITY and UIDNEXT; a folder's is the moment it was listed
-- (its set is the `pending` items claimed with the mark).
CREATE TABLE source_marks (
    source_id    bigint      NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    workflow_id  text        NOT NULL,
    uidvalidity  bigint,
    uidnext      bigint,
    marked_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, workflow_id)
);

-- One row per item fetched: a message (by UIDVALIDITY and UID, and its Message-ID) or a file (by
-- its SHA-256 and name). The row is written in the transaction that imports the item, so a worker
-- killed anywhere leaves every item taken once; the UNIQUE constraints refuse a second one.
CREATE TABLE source_items (
    id           bigserial   PRIMARY KEY,
    source_id    bigint      NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    workflow_id  text        NOT NULL,
    uidvalidity  bigint,
    uid          bigint,
    message_id   text,
    sha256       text,
    name         text        NOT NULL,
    outcome      text        NOT NULL DEFAULT 'pending'
                 CHECK (outcome IN ('pending', 'imported', 'filed', 'loaded')),
    reason       text        NOT NULL DEFAULT '',
    documents    integer     NOT NULL DEFAULT 0,
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((uid IS NOT NULL AND uidvalidity IS NOT NULL) OR sha256 IS NOT NULL),
    UNIQUE (source_id, uidvalidity, uid),
    UNIQUE (source_id, sha256, name)
);
CREATE UNIQUE INDEX source_items_message ON source_items (source_id, message_id)
    WHERE message_id IS NOT NULL;
CREATE INDEX source_items_night ON source_items (workflow_id, source_id);
