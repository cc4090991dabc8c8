"""Tryton modules shipped with recon (docs/ledger.md, "recon's key in Tryton"). Each is a plain
Tryton module that imports only trytond: it can be copied onto an accountant's Tryton as it is."""
