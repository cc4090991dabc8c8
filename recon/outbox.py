"""Kept importable for modules not yet moved to recon/store (issue 9): use recon.store.outbox
and recon.keys."""

from recon.keys import debit_note_key
from recon.store.outbox import Message, enqueue

__all__ = ["Message", "debit_note_key", "enqueue"]
