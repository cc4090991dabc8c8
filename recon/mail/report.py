"""What people ask about mail: which messages went, which wait, which failed, and why.

One definition of a message's state, used by `recon mail`, `recon status` and the summary:
delivered (the server accepted it), failed (refused for good, parked), retrying (tried, waiting
for its next attempt), queued (not tried yet).
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

STATE_SQL = (
    "CASE WHEN sent_at IS NOT NULL THEN 'delivered' WHEN failed_at IS NOT NULL THEN 'failed'"
    " WHEN attempts > 0 THEN 'retrying' ELSE 'queued' END"
)


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
    row = await conn.fetchrow(
        "SELECT count(*) FILTER (WHERE sent_at IS NOT NULL) AS delivered,"
        " count(*) FILTER (WHERE sent_at IS NULL AND failed_at IS NULL) AS pending,"
        " count(*) FILTER (WHERE sent_at IS NULL AND failed_at IS NOT NULL) AS failed"
        " FROM outbox WHERE workflow_id = $1 AND kind = $2",
        workflow_id, kind,
    )
    return Delivery(row["delivered"], row["pending"], row["failed"])


async def list_messages(conn: asyncpg.Connection | asyncpg.Pool,
                        workflow_id: str | None) -> list[asyncpg.Record]:
    return await conn.fetch(
        f"SELECT key, workflow_id, kind, recipient, subject, attempts, last_error,"
        f" created_at, sent_at, failed_at, next_attempt_at, {STATE_SQL} AS state"
        " FROM outbox WHERE $1::text IS NULL OR workflow_id = $1"
        " ORDER BY created_at, key",
        workflow_id,
    )


async def get_message(conn: asyncpg.Connection | asyncpg.Pool, key: str) -> asyncpg.Record | None:
    return await conn.fetchrow(f"SELECT *, {STATE_SQL} AS state FROM outbox WHERE key = $1", key)
