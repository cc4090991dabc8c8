"""Kept importable for modules not yet moved to recon/store (issue 9): use recon.store.run_facts."""

from recon.store.run_facts import run_facts

__all__ = ["run_facts"]
