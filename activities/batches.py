"""Walking a run's rows in `seq` order, one committed batch at a time.

Shared by the posting steps: resume after the previous attempt's last heartbeat, hit the
failpoint for each entry before its batch commits, report progress after each commit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg

from activities.step import report_progress
from recon import failpoints


@dataclass
class Walk:
    started_after: int
    inserted: int = 0
    already_there: int = 0


async def walk_in_batches(
    conn: asyncpg.Connection,
    step: str,
    query: str,
    workflow_id: str,
    batch_size: int,
    start_after: int,
    write: Callable[[list[asyncpg.Record]], Awaitable[int]],
    params: tuple = (),
) -> Walk:
    """`query` takes ($1 workflow_id, $2 seq to start after, $3 limit, then `params`) and returns
    rows with `seq`; `write` commits one batch and returns how many of its rows were new."""
    walk = Walk(started_after=start_after)
    position = start_after
    while True:
        rows = await conn.fetch(query, workflow_id, position, batch_size, *params)
        if not rows:
            return walk
        for row in rows:
            failpoints.hit(step, row["seq"])
        new = await write(rows)
        walk.inserted += new
        walk.already_there += len(rows) - new
        position = rows[-1]["seq"]
        report_progress(position)
        await failpoints.after_batch(step)
