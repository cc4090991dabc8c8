"""Sources: where a warehouse's night fetches its invoices and master data from, unattended.

Three kinds (docs/sources.md): an IMAP folder (`imap://user@host:993/INBOX`, read with
`BODY.PEEK`, recon/sources/imap.py), a drop folder (`folder:/srv/drop`, each file once it has
stopped growing) and an ERP's export folder (`erp:/srv/erp-exports`, loaded by `recon load`'s
rules). A source is configured once (`recon source add`) and kept in Postgres
(recon/store/sources.py); its secret never is, only where the worker reads it.
"""
