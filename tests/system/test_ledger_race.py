"""Two attempts on one run toward Tryton, without Temporal in between: the real fence in Postgres
and the real Tryton (tests/tryton.py). Two pushers holding the same live token post each move once
(each entry is settled under a row lock, looked up in Tryton first); a pusher whose token was
taken over posts nothing."""

from __future__ import annotations

import asyncio
import itertools
import os

import asyncpg
import pytest

from activities.outside_ledger import push
from recon.domain.errors import StaleAttempt
from recon.ledger.tryton import TrytonLedger
from recon.store import ledger_postings as postings
from recon.store.fences import take_fence
from recon.store.ledger import LedgerEntry, post_entries
from tests.tryton import ADMIN_PASSWORD, TrytonServer

pytestmark = pytest.mark.slow

_runs = itertools.count(1)


def _ledger(tryton: TrytonServer) -> TrytonLedger:
    return TrytonLedger(tryton.url, "admin", ADMIN_PASSWORD, payable="AP", variance="PPV",
                        journal="EXP")


async def _owed(pool: asyncpg.Pool, n: int):
    wf = f"recon-2026-10-13-race{os.getpid()}x{next(_runs)}"
    fence = await take_fence(pool, f"{wf}:ledger")
    entries = [LedgerEntry(reference=f"{wf}:INV-{i}:1:price", workflow_id=wf, invoice_no=f"INV-{i}",
                           supplier_id="S001", line_no=1, kind="price", amount_paise=1_000 + i)
               for i in range(n)]
    async with pool.acquire() as conn:
        await post_entries(conn, entries, fence)
        await postings.enqueue_live(conn, wf, None, "tryton")
    return wf, fence, {e.reference: e.amount_paise for e in entries}


async def test_two_pushers_racing_on_one_run_post_each_move_once(
    pool: asyncpg.Pool, tryton: TrytonServer
) -> None:
    wf, fence, wanted = await _owed(pool, 20)

    async def pusher() -> int:
        async with pool.acquire() as conn:
            return await push(conn, _ledger(tryton), fence, wf, None, reversals=False,
                              step="race")

    sent = await asyncio.gather(pusher(), pusher())
    assert sum(sent) == 20
    held = {m["description"]: m["paise"] for m in tryton.moves()}
    assert held == wanted and len(tryton.moves()) == 20


async def test_a_pusher_whose_fence_was_taken_over_posts_nothing(
    pool: asyncpg.Pool, tryton: TrytonServer
) -> None:
    wf, stale, _ = await _owed(pool, 3)
    await take_fence(pool, f"{wf}:ledger")  # another attempt took the run over
    async with pool.acquire() as conn:
        with pytest.raises(StaleAttempt):
            await push(conn, _ledger(tryton), stale, wf, None, reversals=False, step="race")
    assert tryton.moves() == []
    assert await pool.fetchval("SELECT count(*) FROM ledger_postings WHERE workflow_id = $1"
                               " AND state = 'waiting'", wf) == 3
