"""Kept importable for modules not yet moved to recon/store (issue 9): use recon.store.db."""

from recon.errors import DatabaseUnavailable
from recon.store.db import connect_pool, migrate, redact

__all__ = ["DatabaseUnavailable", "connect_pool", "migrate", "redact"]
