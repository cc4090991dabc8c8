"""What people ask about mail: which messages went, which wait, which failed, and why.

One definition of a message's state (`recon.store.mail_deliveries.STATE_SQL`), used by
`recon mail`, `recon status` and the summary: delivered (the server accepted it), failed (refused
for good, parked), retrying (tried, waiting for its next attempt), queued (not tried yet).
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from recon.store import mail_deliveries


@dataclass(frozen=True)
class Delivery:
    """Debit notes (or any kind) of one run by state; pending = queued + retrying."""

    delivered: int = 0
    pending: int = 0
    failed: int = 0

    def line(self, what: str = "debit notes") -> str:
        return f"{what}: {self.delivered} delivered, {self.pending} pending, {self.failed} failed"


async def delivery(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str,
                   kind: str = "debit-note") -> Delivery:
    row = await mail_deliveries.delivery_counts(conn, workflow_id, kind)
    return Delivery(row["delivered"], row["pending"], row["failed"])
