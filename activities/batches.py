"""Walking a run's rows in `seq` order, one committed batch at a time.

Shared by the posting steps: resume after the previous attempt's last heartbeat, hit the
failpoint for each entry before its batch commits, report progress after each commit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg

from activities.step import report_progress
from recon.runtime import failpoints


@dataclass
class Walk:
    started_after: int
    inserted: int = 0
    already_there: int = 0


async def walk_in_batches(
    step: str,
    start_after: int,
    fetch: Callable[[int], Awaitable[list[asyncpg.Record]]],
    write: Callable[[list[asyncpg.Record]], Awaitable[int]],
) -> Walk:
    """`fetch(after_seq)` returns the next batch of rows with `seq` (a store function: the
    query lives in recon/store); `write` commits one batch and returns how many were new."""
    walk = Walk(started_after=start_after)
    position = start_after
    while True:
        rows = await fetch(position)
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
