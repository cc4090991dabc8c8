"""Fencing tokens, issued and checked by Postgres.

Each attempt of a writing step takes a new token for its scope (`{workflow_id}:{store}`); the
token only ever grows, across retries, resets, continue-as-new and an undo taking over. Every write
re-reads the current token *in its own transaction* (FOR SHARE, so a newer holder waits for it to
commit) and refuses to write if a newer attempt has taken over.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from recon.errors import StaleAttempt


def scope_for(workflow_id: str, store: str) -> str:
    return f"{workflow_id}:{store}"


@dataclass(frozen=True)
class Fence:
    scope: str
    token: int

    async def check(self, conn: asyncpg.Connection) -> None:
        """Call inside the write's transaction, before the write."""
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


async def take_fence(conn: asyncpg.Connection | asyncpg.Pool, scope: str) -> Fence:
    """A new token, higher than any handed out before for this scope."""
    token = await conn.fetchval(
        "INSERT INTO fences (scope, token) VALUES ($1, 1)"
        " ON CONFLICT (scope) DO UPDATE SET token = fences.token + 1 RETURNING token",
        scope,
    )
    return Fence(scope, int(token))
