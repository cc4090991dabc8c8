-- Whether the orders file stated a PO line's unit (docs/master-data.md, "Units of measure").
-- An order line that states none counts pieces for whatever counts pieces (a dozen, a gross, a
-- supplier's pack), and takes a unit that measures rather than counts (kg, litre, hour, day) as
-- billed: the order gave no unit to convert it to. Every line loaded before stated none.
ALTER TABLE po_lines ADD COLUMN IF NOT EXISTS unit_stated boolean NOT NULL DEFAULT false;
