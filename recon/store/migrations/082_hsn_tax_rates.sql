-- A GST rate by HSN code and the day it took effect (docs/master-data.md, `recon load
-- hsn-rates`): the rate a PO line that states none is expected to be billed at, on the invoice's
-- date. A rate belongs to the goods and the date, never to a constant: 12 % or 28 % were right for
-- many goods before 2025-09-22. A code may be 2 to 8 digits; the longest code an invoice line's
-- HSN begins with decides.
CREATE TABLE hsn_tax_rates (
    hsn        text         NOT NULL CHECK (hsn ~ '^[0-9]{2,8}$'),
    valid_from date         NOT NULL,
    tax_rate   numeric(7, 4) NOT NULL CHECK (tax_rate BETWEEN 0 AND 100),
    PRIMARY KEY (hsn, valid_from)
);

-- Step 6 finds a night's taxed lines by this index: a night without tax reads nothing for them.
CREATE INDEX invoice_lines_taxed ON invoice_lines (workflow_id) WHERE tax_rate IS NOT NULL;
