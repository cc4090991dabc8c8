"""Kept importable for modules not yet moved to recon/store (issue 9): use recon.store.model_bill."""

from recon.store.model_bill import ModelBill, model_bill

__all__ = ["ModelBill", "model_bill"]
