"""Watching a night from outside while its servers come and go: status and progress by polling,
never by a long-lived call that a Temporal or Postgres restart would break.

Progress is anything the run did: a row it wrote for the night (reads, model calls, matches,
comparisons, postings, messages) or an event added to its Temporal history.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import asyncpg
from temporalio.client import Client, WorkflowExecutionStatus

from recon.store import chaos


@dataclass
class Look:
    """One look at the run; None where the server did not answer this time."""

    status: WorkflowExecutionStatus | None
    history_events: int | None
    rows: int | None
    handover: str | None

    def progress(self) -> tuple[int, int]:
        return (self.rows or 0, self.history_events or 0)


class Watcher:
    def __init__(self, client: Client, url: str, workflow_id: str) -> None:
        self.client, self.url, self.workflow_id = client, url, workflow_id
        self.conn: asyncpg.Connection | None = None
        self.best = (0, 0)  # highest progress seen, per source

    async def look(self) -> Look:
        status = events = rows = None
        handover = None
        with contextlib.suppress(Exception):
            description = await self.client.get_workflow_handle(self.workflow_id).describe(
                rpc_timeout=_seconds(2))
            status, events = description.status, description.history_length
        try:
            if self.conn is None or self.conn.is_closed():
                self.conn = await asyncpg.connect(self.url, timeout=2)
            rows = await chaos.progress_rows(self.conn, self.workflow_id, timeout=2)
            pending = await chaos.pending_handover(self.conn, self.workflow_id, timeout=2)
            if pending is not None:
                handover = (f"{pending['step']}: {pending['error_type']}: "
                            f"{pending['error_message']}".splitlines()[0][:400]
                            + f" (posted {pending['posted']})")
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            await self.close()
        return Look(status, events, rows, handover)

    def moved(self, look: Look) -> bool:
        """True when this look shows more done than any look before."""
        rows, events = look.progress()
        moved = rows > self.best[0] or events > self.best[1]
        self.best = (max(rows, self.best[0]), max(events, self.best[1]))
        return moved

    async def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), 2)
        self.conn = None


def _seconds(n: float):
    from datetime import timedelta

    return timedelta(seconds=n)
