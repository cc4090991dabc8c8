"""Signing requests with an approver's key: `recon undo`, `recon redo`, `recon mail resend|dismiss`.

The CLI signs; the workflow (undo, redo) or the mail transaction (resend, dismiss) checks, against
the approvers on record, and that check is what counts (docs/design.md §3, "Signed requests").
What is checked here is only what saves a person a round trip: the key belongs to an active
approver, and `--by`, if given, names that approver.
"""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from recon.domain.decisions import signing_time
from recon.domain.errors import Refused
from recon.domain.requests import SignedRequest, canonical_mail, canonical_request
from recon.domain.signing import sign
from recon.ops.approvers import owner_of


async def _signer(pool: asyncpg.Pool, key: Ed25519PrivateKey, by: str | None) -> str:
    person = await owner_of(pool, key)
    if not person.active:
        raise Refused(f"{person.name}'s key was revoked at {person.revoked_at:%Y-%m-%d %H:%M:%S}")
    if by is not None and by != person.name:
        raise Refused(f"--by {by!r} is not the owner of this key ({person.name})")
    return person.name


async def signed_request(pool: asyncpg.Pool, key: Ed25519PrivateKey, purpose: str, *, run: str,
                         supplier: str | None, references: list[str], reason: str,
                         by: str | None, now: datetime | None = None) -> SignedRequest:
    """An undo or redo request as the key's owner signs it (purpose recon-undo/1, recon-redo/1)."""
    name = await _signer(pool, key, by)
    signed_at = signing_time(now or datetime.now(UTC))
    payload = canonical_request(purpose, run=run, supplier=supplier, references=references,
                                reason=reason, by=name, signed_at=signed_at)
    return SignedRequest(by=name, signed_at=signed_at, signature=sign(key, payload))


async def signed_mail(pool: asyncpg.Pool, key: Ed25519PrivateKey, purpose: str, *,
                      outbox_key: str, to: str | None, note: str, by: str | None,
                      now: datetime | None = None) -> SignedRequest:
    """A resend or dismiss of a refused message as the key's owner signs it."""
    name = await _signer(pool, key, by)
    signed_at = signing_time(now or datetime.now(UTC))
    payload = canonical_mail(purpose, key=outbox_key, to=to, note=note, by=name,
                             signed_at=signed_at)
    return SignedRequest(by=name, signed_at=signed_at, signature=sign(key, payload))
