"""Invoice documents: how suppliers write them (layouts), the seeded nights made of them (seed),
the files people bring (importer), and reading them back into lines (extraction: the offline
parser and the paid model). Their rows are written by `recon.store` (seeding, model_calls,
extractions); nothing in here talks SQL (docs/design.md, "Documents and delivery")."""
