"""Step 8's two lanes (activities/lanes.py): every range booked once, progress that only ever
names a point everything before which is committed, and a failure that is the step's own."""

from __future__ import annotations

import asyncio
import random

import asyncpg
import pytest

from activities import step
from activities.lanes import LANES, book_in_lanes
from recon.domain.errors import StaleAttempt
from recon.store.stock import RangeMoved


def _watch_progress() -> list[int]:
    """The positions `report_progress` is given, as the heartbeat ticker would read them."""
    reported: list[int] = []

    class Box(dict):
        def __setitem__(self, key: str, value: object) -> None:
            if key == "at":
                reported.append(value)  # type: ignore[arg-type]
            super().__setitem__(key, value)

    step._progress.set(Box(reported=True))  # no first heartbeat: there is no activity here
    return reported


async def test_ranges_are_booked_once_and_progress_is_contiguous(pool: asyncpg.Pool) -> None:
    reported = _watch_progress()
    committed: set[tuple[int, int]] = set()
    backends: set[int] = set()
    rng = random.Random(3)

    async def book(conn: asyncpg.Connection, after: int, upto: int) -> RangeMoved:
        backends.add(await conn.fetchval("SELECT pg_backend_pid()"))
        await asyncio.sleep(rng.uniform(0, 0.02))  # lanes finish out of order
        committed.add((after, upto))
        return RangeMoved(wanted=upto - after, inserted=upto - after - (1 if after == 7 else 0))

    booked = await book_in_lanes(pool, "update_stock", 7, 100, 9, book)

    edges = list(range(7, 100, 9)) + [100]
    assert committed == set(zip(edges, edges[1:], strict=False))
    assert (booked.wanted, booked.inserted) == (93, 92)
    assert len(backends) == LANES, "the ranges ran on two connections"
    assert reported == sorted(reported) and reported[-1] == 100
    for position in reported:  # every range ending at or before a reported point is committed
        assert all((a, b) in committed for a, b in zip(edges, edges[1:], strict=False)
                   if b <= position)


async def test_a_failing_lane_fails_the_step_with_its_own_error(pool: asyncpg.Pool) -> None:
    reported = _watch_progress()
    cancelled = asyncio.Event()

    async def book(conn: asyncpg.Connection, after: int, upto: int) -> RangeMoved:
        if after == 10:
            await asyncio.sleep(0.05)
            raise StaleAttempt("fencing token 1 for x:stock is stale")
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return RangeMoved(wanted=0, inserted=0)

    with pytest.raises(StaleAttempt, match="is stale"):
        await asyncio.wait_for(book_in_lanes(pool, "update_stock", 0, 100, 10, book), 5)
    assert cancelled.is_set(), "the other lane was stopped, its range not left running"
    assert reported == []


async def test_nothing_to_book_books_nothing(pool: asyncpg.Pool) -> None:
    _watch_progress()

    async def book(conn: asyncpg.Connection, after: int, upto: int) -> RangeMoved:
        raise AssertionError("no range should be booked")

    booked = await book_in_lanes(pool, "update_stock", 50, 50, 10, book)
    assert (booked.wanted, booked.inserted) == (0, 0)
