"""Invoice documents: how suppliers write them (layouts), the files people bring (importer, inbox,
intake, attribution), the formats they come in (formats), reading them back into lines
(extraction: the offline parser, the structured reader and the paid model), and the master data an
ERP exports (master_*). Their rows are written by `recon.store` (seeding, extractions,
model_bill); nothing in here talks SQL. The seeded nights and the format writers are proving code,
in `recon.tools` (docs/architecture.md, "Documents and delivery")."""
