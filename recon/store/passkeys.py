"""Approvers' passkeys in Postgres: credentials, one-time enrollment tokens, and the evidence of
passkey-signed decisions (migration 096, docs/desk.md).

The sign counter moves only here, in one statement that compares and sets it, so two checks of
two assertions of one authenticator can never both pass with the same counter. `passkey_problem`
is the one check of a passkey's signature (read the key, verify with the `webauthn` package, take
the counter and keep the evidence): decisions, undo, redo and the mail answers all ask it.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from recon.domain.models import PasskeyProof
from recon.domain.passkeys import (
    PasskeyRefused,
    challenge_of,
    signature_bytes,
    unb64url,
    verify_assertion,
)

Db = asyncpg.Connection | asyncpg.Pool
log = logging.getLogger(__name__)


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


async def passkey_problem(db: Db, proof: PasskeyProof,
                          signature: str, *, name: str, canonical: bytes, rp_id: str, origin: str,
                          what: str) -> str | None:
    """Why a passkey's assertion does not sign `canonical` for `name`, or None: it is by a
    passkey of `name` on record (not revoked), over the SHA-256 of `canonical` (a decision's or a
    request's canonical form, the bytes the CLI signs with Ed25519), for the desk's origin and
    relying party, the person verified; and its sign counter grew (a cloned authenticator's does
    not). Its evidence is kept, so anyone can verify it again later with the `webauthn` package
    alone. The one check of every passkey signature: decisions, undo, redo, mail resend and
    dismiss. `db` a connection: in the caller's transaction (the mail answers lock the message);
    a pool: in a transaction of its own. `what` names what was signed, for the refusal."""
    forged = (f"forged or altered: the passkey assertion does not verify against {name}'s "
              f"passkey for this {what}")
    try:
        credential_id = unb64url(proof.credential_id)
        raw = signature_bytes(signature)
    except PasskeyRefused:
        return forged
    key = await by_credential(db, credential_id)
    if key is None or key.approver != name:
        return f"the passkey that signed is not one of {name}'s on record"
    if key.revoked_at is not None:
        return f"{name}'s passkey was revoked at {key.revoked_at:%Y-%m-%d %H:%M:%S %Z}"
    try:
        count = verify_assertion(proof, raw, challenge=challenge_of(canonical),
                                 public_key=key.public_key, rp_id=rp_id, origin=origin)
    except PasskeyRefused as exc:
        log.warning("passkey assertion by %s refused: %s", name, exc)
        return forged
    evidence = {"signature_sha256": hashlib.sha256(raw).digest(), "credential_id": credential_id,
                "approver": name, "canonical": canonical,
                "authenticator_data": unb64url(proof.authenticator_data),
                "client_data_json": unb64url(proof.client_data_json), "signature": raw,
                "sign_count": count}
    if isinstance(db, asyncpg.Pool):
        async with db.acquire() as conn, conn.transaction():
            fresh = await record_assertion(conn, **evidence)
    else:
        fresh = await record_assertion(db, **evidence)
    if not fresh:
        return (f"{name}'s passkey counter did not grow ({count}, {key.sign_count} on record): "
                f"a cloned authenticator or an old assertion; refused")
    return None
