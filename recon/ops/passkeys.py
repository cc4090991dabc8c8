"""Passkey enrollment links (`recon approvers add NAME … --passkey`): a one-time token, kept only
as its SHA-256, good for one registration within ENROLLMENT_VALID_FOR (docs/desk.md); and the one
check of a passkey's signature (`passkey_problem`), for decisions and signed requests alike.

The token travels in the link's fragment (`/enroll#TOKEN`), which browsers never send to a
server, a proxy log or a Referer: the desk's page reads it and posts it once.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import UTC, datetime, timedelta

import asyncpg

from recon.domain.models import PasskeyProof
from recon.domain.passkeys import (
    PasskeyRefused,
    challenge_of,
    signature_bytes,
    unb64url,
    verify_assertion,
)
from recon.store import passkeys as store

log = logging.getLogger(__name__)

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


async def passkey_problem(db: asyncpg.Connection | asyncpg.Pool, proof: PasskeyProof,
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
    key = await store.by_credential(db, credential_id)
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
            fresh = await store.record_assertion(conn, **evidence)
    else:
        fresh = await store.record_assertion(db, **evidence)
    if not fresh:
        return (f"{name}'s passkey counter did not grow ({count}, {key.sign_count} on record): "
                f"a cloned authenticator or an old assertion; refused")
    return None
