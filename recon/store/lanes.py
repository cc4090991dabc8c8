"""A large night's statement in two lanes of PO numbers, on two connections (steps 3 and 4).

Steps 3-5 are single statements with no Python in between, so one connection keeps one Postgres
backend busy while the machine's other core idles (docs/design.md §8). A statement whose rows
fall apart by PO number, and that fills only rows nobody reads before its step ends, runs as two:
the lower PO numbers in the step's own transaction, the upper ones on a second connection in a
transaction of its own. That second transaction may commit while the step's own rolls back (a
crash, a lost connection), so every such statement is written to fill what is missing, and the
step's mark of completion commits in the step's own transaction, last: a retry finds the upper
lane's rows there and adds only the rest.

The lanes halve the night's range by orders (the primary key of `purchase_orders`, no table
read). Every line a lane can take cites an order, so no line falls between the two halves.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine

import asyncpg

from recon.store.db import both, spare_connection

# A night of at least this many lines runs in two lanes; a smaller one gains less than a second
# transaction and a split costs.
LANE_LINES = 20_000

# The two neighbouring PO numbers that halve [$1, $2] by orders: the lower lane ends at the first,
# the upper begins at the second.
_MIDDLE_ORDERS = """
SELECT po_number FROM purchase_orders WHERE po_number BETWEEN $1 AND $2 ORDER BY po_number
OFFSET greatest((SELECT count(*) FROM purchase_orders WHERE po_number BETWEEN $1 AND $2) / 2 - 1,
                0)
LIMIT 2
"""

Lane = Callable[[asyncpg.Connection, str, str], Coroutine[object, object, object]]


async def in_lanes(conn: asyncpg.Connection, pool: asyncpg.Pool | None, lines: int,
                   low: str | None, high: str | None, settings: str, lane: Lane) -> None:
    """Run `lane(connection, from_po, to_po)` over [low, high]: once on `conn` for a small night
    (or when the pool has no connection to spare), else as two lanes at once. The caller holds the
    run's lock and its transaction, with `settings` (`SET LOCAL ...`) applied; the upper lane's
    transaction applies them too."""
    middle: list[str] = []
    if pool is not None and lines >= LANE_LINES and low is not None and high is not None \
            and low < high:
        middle = [r["po_number"] for r in await conn.fetch(_MIDDLE_ORDERS, low, high)]
    if len(middle) < 2:
        await lane(conn, low, high)  # type: ignore[arg-type]
        return
    assert pool is not None and high is not None
    async with spare_connection(pool) as other:
        if other is None:
            await lane(conn, low, high)  # type: ignore[arg-type]
            return

        async def upper() -> None:
            async with other.transaction():
                await other.execute(settings)
                await lane(other, middle[1], high)

        await both(upper(), lane(conn, low, middle[0]))  # type: ignore[arg-type]
