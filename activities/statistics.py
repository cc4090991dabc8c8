"""The steps' refresh of the planner's statistics, with a log line naming what it analyzed: which
tables a night refreshed is what tells a slow night's cause (recon/store/statistics.py)."""

from __future__ import annotations

import asyncpg
from temporalio import activity

from recon.store import statistics


async def refresh_statistics(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str,
                             *tables: str) -> list[str]:
    analyzed = await statistics.refresh_statistics(conn, workflow_id, *tables)
    if analyzed:
        activity.logger.info("statistics refreshed: %s", ", ".join(analyzed))
    return analyzed
