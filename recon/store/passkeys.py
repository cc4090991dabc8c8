"""Approvers' passkeys in Postgres: credentials, one-time enrollment tokens, and the evidence of
passkey-signed decisions (migration 096, docs/desk.md).

The sign counter moves only here, in one statement that compares and sets it, so two checks of
two assertions of one authenticator can never both pass with the same counter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

Db = asyncpg.Connection | asyncpg.Pool


@dataclass(frozen=True)
class Passkey:
    credential_id: bytes
    approver: str
    public_key: bytes
    sign_count: int
    transports: list[str]
    created_at: datetime
    revoked_at: datetime | None


_COLUMNS = "credential_id, approver, public_key, sign_count, transports, created_at, revoked_at"


def _passkey(row: asyncpg.Record | None) -> Passkey | None:
    return None if row is None else Passkey(**dict(row))


async def add_enrollment(conn: Db, token_sha256: bytes, approver: str,
                         expires_at: datetime) -> None:
    await conn.execute(
        "INSERT INTO passkey_enrollments (token_sha256, approver, expires_at) VALUES ($1, $2, $3)",
        token_sha256, approver, expires_at)


async def enrollment_open(conn: Db, token_sha256: bytes) -> str | None:
    """The approver an unused, unexpired token enrolls, if any (an active approver only)."""
    return await conn.fetchval(
        "SELECT e.approver FROM passkey_enrollments e JOIN approvers a ON a.name = e.approver"
        " WHERE e.token_sha256 = $1 AND e.used_at IS NULL AND e.expires_at > now() AND a.active",
        token_sha256)


async def enroll(conn: Db, token_sha256: bytes, credential_id: bytes, public_key: bytes,
                 sign_count: int, transports: list[str]) -> str | None:
    """Spend the token and register the credential in one statement; None when the token is
    used, expired, unknown, or its approver revoked (or the credential is already on record)."""
    return await conn.fetchval(
        "WITH spent AS (UPDATE passkey_enrollments e SET used_at = now() FROM approvers a"
        "   WHERE e.token_sha256 = $1 AND e.used_at IS NULL AND e.expires_at > now()"
        "     AND a.name = e.approver AND a.active RETURNING e.approver)"
        " INSERT INTO approver_passkeys (credential_id, approver, public_key, sign_count, transports)"
        " SELECT $2, approver, $3, $4, $5 FROM spent ON CONFLICT DO NOTHING RETURNING approver",
        token_sha256, credential_id, public_key, sign_count, transports)


async def by_credential(conn: Db, credential_id: bytes) -> Passkey | None:
    return _passkey(await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM approver_passkeys WHERE credential_id = $1", credential_id))


async def of_approver(conn: Db, approver: str) -> list[Passkey]:
    rows = await conn.fetch(
        f"SELECT {_COLUMNS} FROM approver_passkeys WHERE approver = $1 AND revoked_at IS NULL"
        " ORDER BY created_at", approver)
    return [Passkey(**dict(r)) for r in rows]


async def advance_counter(conn: Db, credential_id: bytes, new_count: int) -> bool:
    """Take the assertion's counter: it must grow, unless the authenticator keeps none (both 0).
    False: it did not grow (a cloned authenticator, or an assertion used before)."""
    return await conn.fetchval(
        "UPDATE approver_passkeys SET sign_count = $2 WHERE credential_id = $1"
        " AND revoked_at IS NULL AND ($2 > sign_count OR ($2 = 0 AND sign_count = 0))"
        " RETURNING true", credential_id, new_count) is True


async def evidence(conn: Db, signature_sha256: bytes) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "SELECT p.credential_id, p.approver, p.canonical, p.authenticator_data,"
        " p.client_data_json, p.signature, p.sign_count, p.verified_at, k.public_key"
        " FROM passkey_assertions p JOIN approver_passkeys k USING (credential_id)"
        " WHERE p.signature_sha256 = $1", signature_sha256)


async def record_assertion(conn: asyncpg.Connection, *, signature_sha256: bytes,
                           credential_id: bytes, approver: str, canonical: bytes,
                           authenticator_data: bytes, client_data_json: bytes, signature: bytes,
                           sign_count: int) -> bool:
    """Keep a verified decision's evidence and advance the counter, in the caller's transaction.
    The same assertion again (a retried check) finds its row and passes without moving the
    counter; a new one must move it (False: cloned or stale)."""
    # one check of one authenticator at a time: the counter is read and moved under this lock
    await conn.execute("SELECT 1 FROM approver_passkeys WHERE credential_id = $1 FOR UPDATE",
                       credential_id)
    if await conn.fetchval("SELECT true FROM passkey_assertions WHERE signature_sha256 = $1",
                           signature_sha256):
        return True
    if not await advance_counter(conn, credential_id, sign_count):
        return False
    await conn.execute(
        "INSERT INTO passkey_assertions (signature_sha256, credential_id, approver, canonical,"
        " authenticator_data, client_data_json, signature, sign_count)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        signature_sha256, credential_id, approver, canonical, authenticator_data,
        client_data_json, signature, sign_count)
    return True


async def latest_evidence(conn: Db, approver: str | None = None) -> list[asyncpg.Record]:
    """Passkey-signed decisions on record, newest first (the standalone verifier's input)."""
    return await conn.fetch(
        "SELECT p.signature_sha256, p.credential_id, p.approver, p.canonical,"
        " p.authenticator_data, p.client_data_json, p.signature, p.sign_count, k.public_key"
        " FROM passkey_assertions p JOIN approver_passkeys k USING (credential_id)"
        " WHERE $1::text IS NULL OR p.approver = $1 ORDER BY p.verified_at DESC", approver)


async def active(conn: Db) -> list[Passkey]:
    """The passkeys of active approvers that are not revoked (a run's screening past the cap)."""
    rows = await conn.fetch(
        f"SELECT {', '.join('k.' + c for c in _COLUMNS.split(', '))} FROM approver_passkeys k"
        " JOIN approvers a ON a.name = k.approver WHERE a.active AND k.revoked_at IS NULL")
    return [Passkey(**dict(r)) for r in rows]


async def counts(conn: Db) -> dict[str, int]:
    """Registered, unrevoked passkeys per approver (`recon approvers list`)."""
    rows = await conn.fetch("SELECT approver, count(*) AS n FROM approver_passkeys"
                            " WHERE revoked_at IS NULL GROUP BY approver")
    return {r["approver"]: r["n"] for r in rows}


async def listed(conn: Db, approver: str) -> list[asyncpg.Record]:
    """Every passkey of `approver`, revoked ones too, with the decisions and requests it signed
    (`recon approvers passkeys NAME`)."""
    return await conn.fetch(
        "SELECT k.credential_id, k.sign_count, k.transports, k.created_at, k.revoked_at,"
        " count(p.signature_sha256) AS signed, max(p.verified_at) AS last_signed"
        " FROM approver_passkeys k LEFT JOIN passkey_assertions p USING (credential_id)"
        " WHERE k.approver = $1 GROUP BY k.credential_id ORDER BY k.created_at", approver)


async def revoke(conn: Db, credential_id: bytes) -> datetime | None:
    """Revoke one passkey: it signs in and signs no more. None when it was already revoked."""
    return await conn.fetchval(
        "UPDATE approver_passkeys SET revoked_at = now() WHERE credential_id = $1"
        " AND revoked_at IS NULL RETURNING revoked_at", credential_id)


async def still_signed_in(conn: Db, approver: str, credential_id: bytes) -> bool:
    """Is the passkey a desk session signed in with still good: not revoked, its approver
    active? (asked on every page: revoking either ends the session)"""
    return await conn.fetchval(
        "SELECT true FROM approver_passkeys k JOIN approvers a ON a.name = k.approver"
        " WHERE k.credential_id = $1 AND k.approver = $2 AND k.revoked_at IS NULL AND a.active",
        credential_id, approver) is True
