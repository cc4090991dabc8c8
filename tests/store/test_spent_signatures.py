"""One use per signature (recon/store/requests.py), on the session's real Postgres: the
same use again is the same use (a retried check, an Update sent twice), another use is refused
with when the first one was, and two uses racing leave one winner."""

from __future__ import annotations

import asyncio
import hashlib
import uuid

import asyncpg

from recon.store.requests import spend


async def test_the_same_target_again_is_one_use_and_another_target_is_refused(
        pool: asyncpg.Pool) -> None:
    digest = hashlib.sha256(uuid.uuid4().bytes).digest()
    use = dict(purpose="recon-undo/1", run="recon-2026-10-13-x", signer="asha")
    assert await spend(pool, digest, target="undo-recon-2026-10-13-x@run-1", **use) is None
    assert await spend(pool, digest, target="undo-recon-2026-10-13-x@run-1", **use) is None
    used = await spend(pool, digest, target="undo-recon-2026-10-13-x@run-2", **use)
    assert used is not None and used[0] == "undo-recon-2026-10-13-x@run-1"
    assert await pool.fetchval("SELECT count(*) FROM spent_signatures"
                               " WHERE signature_sha256 = $1", digest) == 1


async def test_two_uses_at_once_leave_one_winner(pool: asyncpg.Pool) -> None:
    digest = hashlib.sha256(uuid.uuid4().bytes).digest()
    answers = await asyncio.gather(*(
        spend(pool, digest, purpose="recon-decision/1", run="r", target=f"r@e#handover-{n}",
              signer="ravi") for n in range(8)))
    winners = [n for n, a in enumerate(answers) if a is None]
    assert len(winners) == 1
    assert {a[0] for a in answers if a is not None} == {f"r@e#handover-{winners[0]}"}
