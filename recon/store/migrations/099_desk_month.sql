-- The desk's month page (recon/store/desk_month.py) reads the two tables that hold a row per
-- invoice of every night for a whole month: by these covering indexes it reads them index only
-- (no heap page of the documents or the model's answers), in night-id order.
CREATE INDEX run_invoices_suppliers ON run_invoices (workflow_id, supplier_id);
CREATE INDEX model_calls_bill ON model_calls (workflow_id)
    INCLUDE (extractor, prompt_tokens, completion_tokens, price_in_usd, price_out_usd);
