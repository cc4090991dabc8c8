"""Kept importable for modules not yet moved to recon/store (issue 9): use recon.store.outbox."""

from recon.store.outbox import Message, debit_note_key, enqueue

__all__ = ["Message", "debit_note_key", "enqueue"]
