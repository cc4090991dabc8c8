"""Passkey enrollment links (`recon approvers add NAME … --passkey`): a one-time token, kept only
as its SHA-256, good for one registration within ENROLLMENT_VALID_FOR (docs/desk.md).

The token travels in the link's fragment (`/enroll#TOKEN`), which browsers never send to a
server, a proxy log or a Referer: the desk's page reads it and posts it once.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

import asyncpg

from recon.store import passkeys as store

ENROLLMENT_VALID_FOR = timedelta(hours=24)


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


async def enrollment_link(conn: asyncpg.Connection | asyncpg.Pool, approver: str, origin: str,
                          now: datetime | None = None) -> str:
    """A new one-time link for `approver` to register a passkey on the desk at `origin`."""
    token = secrets.token_urlsafe(32)
    expires = (now or datetime.now(UTC)) + ENROLLMENT_VALID_FOR
    await store.add_enrollment(conn, token_digest(token), approver, expires)
    return f"{origin.rstrip('/')}/enroll#{token}"
