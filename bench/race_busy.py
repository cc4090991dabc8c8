"""A second busy process for the race tests (issue 44 item 5): it burns one core and, given a
database URL, keeps writing ledger batches of its own into the same Postgres, so the racing
posters run with the CPU taken and the ledger growing under them (plans change as it grows).

    uv run python bench/race_busy.py [DATABASE_URL]

Runs until killed. tests/store/test_races.py starts it itself with RECON_RACE_BUSY=1.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from recon.store.db import connect_pool  # noqa: E402 - after the path above
from recon.store.ledger import LedgerEntry, post_entries  # noqa: E402

BATCH = 25
BURN_SECONDS = 0.05  # of CPU between two batches


def _burn(seconds: float) -> int:
    """Spin the CPU for about `seconds`; what it counted, so nothing is optimised away."""
    end, n = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        n += 1
    return n


async def _write_forever(url: str) -> None:
    pool = await connect_pool(url, min_size=1, max_size=2)
    workflow_id = f"busy-{uuid.uuid4()}"
    line = 0
    while True:
        batch = []
        for _ in range(BATCH):
            line += 1
            batch.append(LedgerEntry(
                reference=f"{workflow_id}/{line}", workflow_id=workflow_id, invoice_no="BUSY",
                supplier_id="SUP-BUSY", line_no=line, kind="qty", amount_paise=-line))
        async with pool.acquire() as conn:
            await post_entries(conn, batch[::-1])
        _burn(BURN_SECONDS)


def main() -> None:
    if len(sys.argv) > 1:
        asyncio.run(_write_forever(sys.argv[1]))
    while True:
        _burn(1.0)


if __name__ == "__main__":
    main()
