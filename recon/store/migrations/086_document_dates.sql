-- One name for each date a line carries (docs/books.md "Dates"), so no rule reads the wrong one:
--
-- * `issued_on`: the document's own date, the supplier's (`invoices.issued_on`); NULL when the
--   document states none (a text or PDF bill). The HSN rate and a change of rate (CGST Act s.14),
--   the order of a night's lines within one PO line, and the original invoice's date on a debit
--   note (CGST Rules r.53(1A)) are read on it.
-- * `billed_night`: the night the bill came in (its business date; a line carried from an
--   earlier night's hold keeps the night that first held it). The receipt grace counts from it.
-- * `held_until`: the night a held line is claimed if its goods have not come.
--
-- Until now the night was stored under the name `invoice_date`, and a rule that meant the
-- document's date read it.
ALTER TABLE line_matches RENAME COLUMN invoice_date TO billed_night;
ALTER TABLE line_matches ADD COLUMN issued_on date;
ALTER TABLE held_lines RENAME COLUMN invoice_date TO billed_night;
ALTER TABLE held_lines ADD COLUMN issued_on date;
ALTER INDEX held_lines_warehouse RENAME TO held_lines_warehouse_night;
ALTER TABLE invoice_fingerprints RENAME COLUMN invoice_date TO billed_night;

-- A specific compensation cess (`CesNonAdvlAmt`: per unit or per thousand sticks) apart from the
-- ad valorem one (`CesRt` on the assessable value, `cess_paise`): it does not grow with the price,
-- so a claim takes it by units, never by value (docs/books.md "Tax").
ALTER TABLE invoice_lines ADD COLUMN cess_specific_paise bigint;

-- Working tables sample small, as every column of them does (docs/design.md §8).
ALTER TABLE line_matches ALTER COLUMN issued_on SET STATISTICS 10;
ALTER TABLE held_lines ALTER COLUMN issued_on SET STATISTICS 10;
ALTER TABLE invoice_lines ALTER COLUMN cess_specific_paise SET STATISTICS 10;
