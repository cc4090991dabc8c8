-- Invoice numbers are unique per supplier only (under GST, per supplier GSTIN and financial year):
-- S002's INV-7001 is another invoice than S001's. The source keys an invoice by both; the run's
-- working set and everything after it name it by its reference `{supplier_id}:{invoice_no}`
-- (recon/domain/keys.py `invoice_ref`, docs/design.md §1). Rows of nights posted before keep the
-- bare number they were written with.
ALTER TABLE invoices DROP CONSTRAINT invoices_pkey;
ALTER TABLE invoices ADD PRIMARY KEY (supplier_id, invoice_no);
