"""Fencing tokens, issued and checked by Postgres.

Each attempt of a writing step takes a new token for its scope (`{workflow_id}:{store}`); the
token only ever grows, across retries, resets, continue-as-new and an undo taking over. Every write
re-reads the current token *in its own transaction* (FOR SHARE, so a newer holder waits for it to
commit) and refuses to write if a newer attempt has taken over.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import asyncpg

from recon.domain.errors import StaleAttempt


@dataclass(frozen=True)
class Fence:
    scope: str
    token: int
    # What may be written at all (recon/store/mandates.py): asked in the same transaction, after
    # the token, by every write that checks this fence. None: no mandate is asked.
    mandate: Callable[[asyncpg.Connection], Awaitable[None]] | None = None

    def with_mandate(self, mandate: Callable[[asyncpg.Connection], Awaitable[None]]) -> Fence:
        return replace(self, mandate=mandate)

    async def check_mandate(self, conn: asyncpg.Connection) -> None:
        """Raises MandateRefused when there is no mandate for the write (inside its transaction)."""
        if self.mandate is not None:
            await self.mandate(conn)

    async def check(self, conn: asyncpg.Connection) -> None:
        """Call inside the write's transaction, before the write: the token, then the mandate."""
        await self._check_token(conn)
        await self.check_mandate(conn)

    async def _check_token(self, conn: asyncpg.Connection) -> None:
        current = await conn.fetchval(
            "SELECT token FROM fences WHERE scope = $1 FOR SHARE", self.scope
        )
        if current is None:
            raise StaleAttempt(f"no fencing token was ever issued for {self.scope}")
        if current != self.token:
            raise StaleAttempt(
                f"fencing token {self.token} for {self.scope} is stale (newest is {current}): "
                "another attempt took this work over, so this one writes nothing"
            )


@dataclass(frozen=True)
class Holder:
    """Which attempt asks: its workflow run, the activity's sequence in that run, the attempt."""

    run_id: str
    seq: int
    attempt: int


async def take_fence(
    conn: asyncpg.Connection | asyncpg.Pool, scope: str, holder: Holder | None = None
) -> Fence:
    """A new token, higher than any handed out before for this scope. Refused (StaleAttempt)
    when a later activity or attempt of the same workflow run already holds the scope: a woken
    stale attempt can never take the work back from the live one."""
    if holder is None:
        token = await conn.fetchval(
            "SELECT recon_take_fence($1, NULL, NULL, NULL)", scope
        )
    else:
        token = await conn.fetchval(
            "SELECT recon_take_fence($1, $2, $3, $4)",
            scope, holder.run_id, holder.seq, holder.attempt,
        )
    if token < 0:
        raise StaleAttempt(
            f"attempt {holder.attempt if holder else '?'} may not take {scope}: a later attempt "
            f"of this run holds it (token {-token}), so this one writes nothing"
        )
    return Fence(scope, int(token))
