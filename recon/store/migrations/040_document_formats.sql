-- Documents in real formats (GST e-invoice, UBL, CII, Factur-X, PDF) name their sender by a tax or
-- network id; the importer maps it through these columns. Written idempotently (ADD COLUMN IF NOT
-- EXISTS) so another migration adding the same column (`gstin`) cannot clash with this one.
ALTER TABLE suppliers ADD COLUMN IF NOT EXISTS gstin text;
CREATE UNIQUE INDEX IF NOT EXISTS suppliers_gstin ON suppliers (gstin) WHERE gstin IS NOT NULL;
ALTER TABLE suppliers ADD COLUMN IF NOT EXISTS vat_id text;
CREATE UNIQUE INDEX IF NOT EXISTS suppliers_vat_id ON suppliers (vat_id) WHERE vat_id IS NOT NULL;
-- "scheme:id" as Peppol writes it, e.g. 0088:7300010000001
ALTER TABLE suppliers ADD COLUMN IF NOT EXISTS peppol_endpoint text;
CREATE UNIQUE INDEX IF NOT EXISTS suppliers_peppol_endpoint ON suppliers (peppol_endpoint)
    WHERE peppol_endpoint IS NOT NULL;
-- The currency a supplier bills in. Amounts are stored in its minor unit, never converted: a
-- document in any other currency is refused at import.
ALTER TABLE suppliers ADD COLUMN IF NOT EXISTS currency text NOT NULL DEFAULT 'INR'
    CHECK (currency ~ '^[A-Z]{3}$');

-- Where each imported invoice came from (the original file is not kept: its name and digest are).
ALTER TABLE invoices ADD COLUMN IF NOT EXISTS format text;
ALTER TABLE invoices ADD COLUMN IF NOT EXISTS file_name text;
ALTER TABLE invoices ADD COLUMN IF NOT EXISTS file_sha256 text;
ALTER TABLE invoices ADD COLUMN IF NOT EXISTS issued_on date;

-- Credit notes suppliers send (UBL CreditNote, e-invoice CRN, CII 381): kept apart from invoices,
-- never reconciled as one, listed in the night's summary against the documents they cite.
CREATE TABLE IF NOT EXISTS credit_notes (
    supplier_id    text    NOT NULL REFERENCES suppliers,
    credit_note_no text    NOT NULL,
    business_date  date    NOT NULL,
    warehouse      text    NOT NULL,
    issued_on      date,
    format         text    NOT NULL,
    file_name      text    NOT NULL,
    file_sha256    text    NOT NULL,
    cites          text[]  NOT NULL DEFAULT '{}',
    amount_paise   bigint  NOT NULL CHECK (amount_paise >= 0),
    currency       text    NOT NULL,
    lines          integer NOT NULL CHECK (lines > 0),
    document       text    NOT NULL,
    imported_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (supplier_id, credit_note_no)
);
CREATE INDEX IF NOT EXISTS credit_notes_night ON credit_notes (business_date, warehouse);

-- Every message `recon import --maildir` has dealt with, by Message-ID (or the digest of a message
-- that has none): a message is imported once, or filed once as unreadable with its reason.
CREATE TABLE IF NOT EXISTS mail_messages (
    message_id    text PRIMARY KEY,
    business_date date NOT NULL,
    warehouse     text NOT NULL,
    outcome       text NOT NULL CHECK (outcome IN ('imported', 'unreadable')),
    reason        text NOT NULL DEFAULT '',
    documents     integer NOT NULL DEFAULT 0 CHECK (documents >= 0),
    file_name     text NOT NULL,
    recorded_at   timestamptz NOT NULL DEFAULT now()
);
