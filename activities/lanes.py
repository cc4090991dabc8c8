"""Booking a run's seq ranges on two Postgres connections at once (step 8).

Step 8 is one statement per range and no Python in between, so one connection keeps one
Postgres backend busy while the machine's other core idles: two lanes took a 246k-line night's
ranges from 4.4-4.6 s to 2.8-3.2 s (bench/README.md, 2026-12-01 16:34; the rule:
docs/design.md §8).

What stays as it was with one lane:
- every range is one transaction, keyed per row, so a range booked twice moves nothing twice;
- the progress reported (and heartbeated) is the end of the *contiguous* run of committed ranges:
  a retry resumes there and walks again at most the ranges the other lane had committed beyond it,
  which the keys make harmless;
- a lane holds one connection and never waits for a second, so lanes cannot starve the pool
  into a deadlock; when one lane fails, the other is cancelled (its open range rolls back) and
  the failure is the step's;
- the ranges lock `stock_levels` rows in key order, so two lanes (or two nights of one warehouse)
  wait for each other there instead of deadlocking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg

from activities.step import report_progress
from recon.runtime import failpoints
from recon.store.stock import RangeMoved

LANES = 2  # the machines this runs on have two cores; Postgres is the only busy process in step 8


@dataclass
class Booked:
    wanted: int = 0
    inserted: int = 0


async def book_in_lanes(
    pool: asyncpg.Pool, step: str, start_after: int, last_seq: int, size: int,
    book: Callable[[asyncpg.Connection, int, int], Awaitable[RangeMoved]],
) -> Booked:
    """Book (start_after, last_seq] in ranges of `size`; `book(conn, after, upto)` commits one."""
    booked = Booked()
    next_after = start_after
    contiguous = start_after
    committed: dict[int, int] = {}  # after -> upto, for ranges committed beyond `contiguous`

    async def lane() -> None:
        nonlocal next_after, contiguous
        async with pool.acquire() as conn:
            while next_after < last_seq:
                after, upto = next_after, min(next_after + size, last_seq)
                next_after = upto
                failpoints.hit_range(step, after, upto)  # before this range commits
                moved = await book(conn, after, upto)
                booked.wanted += moved.wanted
                booked.inserted += moved.inserted
                committed[after] = upto
                while contiguous in committed:
                    contiguous = committed.pop(contiguous)
                report_progress(contiguous)
                await failpoints.after_batch(step)

    try:
        async with asyncio.TaskGroup() as lanes:
            for _ in range(LANES):
                lanes.create_task(lane())
    except BaseExceptionGroup as failed:
        # The step's error handling classifies the failure itself (recon.domain.errors), not a group.
        raise failed.exceptions[0] from None
    return booked
