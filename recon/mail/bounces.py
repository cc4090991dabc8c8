"""Delivery handovers (see recon/mail/failures.py for the rule): listing them and answering them.

`recon mail resend KEY [--to ADDRESS]` puts the refused message back in the queue (to a corrected
address if given; the Message-ID stays, it is the same claim); `recon mail dismiss` closes the
handover without sending. Both are signed requests (purposes recon-mail-resend/1 and
recon-mail-dismiss/1, docs/design.md §3 "Signed requests"): the signature is checked against the approvers on
record in the same transaction that acts on it, with the message locked, and the handover row names
the key's owner. On the desk the same answers are signed by a passkey (`SignedRequest.passkey`),
checked by the one passkey check decisions use, in this transaction. A refused request changes
nothing but `refused_requests`, where it is kept with who tried. One use per signature: a signed
resend answers one refusal of one message (the message's `failed_at`), never a later one. Listing
them is `recon.store.bounces.open_handovers` / `handovers_of`."""

from __future__ import annotations

import uuid
from datetime import timedelta

import asyncpg

from recon.domain.errors import NotRefused, Refused
from recon.domain.passkeys import RelyingParty
from recon.domain.requests import (
    MAIL_DISMISS,
    MAIL_RESEND,
    WHAT,
    RequestVerdict,
    SignedRequest,
    already_used,
    canonical_mail,
    judge,
    signature_digest,
)
from recon.domain.signing import verifies
from recon.store import approvers, bounces, mail_deliveries, passkeys, requests


async def _refusal(conn: asyncpg.Connection, purpose: str, *, key: str, row: asyncpg.Record,
                   signed: SignedRequest, to: str | None, note: str, stake: dict[str, int],
                   max_age: timedelta, party: RelyingParty | None) -> str | None:
    """Why this signed answer cannot be taken (recorded), or None: then its signature is spent."""
    received = await requests.clock(conn)
    person = await approvers.by_name(conn, signed.by[:64]) if signed.signature else None
    payload = canonical_mail(purpose, key=key, to=to, note=note, by=signed.by,
                             signed_at=signed.signed_at)
    if person is not None and signed.passkey is not None and signed.signed_at:
        problem = "a passkey's signature is checked against the desk's origin: none was given"
        if party is not None:
            problem = await passkeys.passkey_problem(
                conn, signed.passkey, signed.signature, name=person.name, canonical=payload,
                rp_id=party.rp_id, origin=party.origin, what=WHAT[purpose])
        verdict = RequestVerdict(refused=problem) if problem else judge(
            purpose, by=signed.by, signer=person, verified=True, signed_at=signed.signed_at,
            signature=signed.signature, received_at=received, max_age=max_age, stake=stake)
    else:
        verified = person is not None and signed.passkey is None and verifies(
            person.public_key, payload, signed.signature)
        verdict = judge(purpose, by=signed.by, signer=person, verified=verified,
                        signed_at=signed.signed_at, signature=signed.signature,
                        received_at=received, max_age=max_age, stake=stake if verified else {})
    refused = verdict.refused
    if not refused:
        digest = signature_digest(signed.signature)
        assert digest is not None  # it verified
        failed = row["failed_at"].isoformat() if row["failed_at"] else "-"
        used = await requests.spend(conn, digest, purpose=purpose,
                                           run=row["workflow_id"], target=f"{key}@{failed}",
                                           signer=verdict.approver)
        refused = already_used(*used) if used else ""
    if not refused:
        return None
    await requests.record_refusal(
        conn, check_id=str(uuid.uuid4()), purpose=purpose, run=row["workflow_id"], target=key,
        tried_by=signed.by, signer=verdict.approver or None, stake_paise=verdict.stake_paise or None,
        reason=refused, received_at=received)
    return refused


async def resend(pool: asyncpg.Pool, key: str, signed: SignedRequest, to: str | None, note: str,
                 max_age: timedelta, party: RelyingParty | None = None) -> str:
    if to is not None and "@" not in to:
        raise ValueError(f"--to must be an email address, got {to!r}")
    async with pool.acquire() as conn, conn.transaction():
        row = await mail_deliveries.lock_message(conn, key)
        if row is None:
            raise LookupError(f"no message {key!r} in the outbox (see `recon mail`)")
        if row["failed_at"] is None:
            state = "delivered" if row["sent_at"] else "still being tried"
            raise NotRefused(f"message {key} was not refused ({state}): nothing to resend")
        refused = await _refusal(conn, MAIL_RESEND, key=key, row=row, signed=signed, to=to,
                                 note=note, stake={row["currency"]: abs(row["amount_paise"] or 0)},
                                 max_age=max_age, party=party)
        if refused is None:
            await mail_deliveries.queue_again(conn, key, to)
            await bounces.decide(conn, key, "resend", signed.by,
                                        note or (f"resend to {to}" if to else "resend"))
            await mail_deliveries.wake_senders(conn)
    if refused is not None:  # on record, committed above; nothing else changed
        raise Refused(f"resend of {key} refused: {refused}")
    return f"{key} queued again for {to or row['recipient']}"


async def dismiss(pool: asyncpg.Pool, key: str, signed: SignedRequest, note: str,
                  max_age: timedelta, party: RelyingParty | None = None) -> str:
    if not note.strip():
        raise ValueError("say why (--note WHY)")
    async with pool.acquire() as conn, conn.transaction():
        row = await mail_deliveries.lock_message(conn, key)
        if row is None or not await bounces.is_open(conn, key):
            raise LookupError(f"no open delivery handover for {key!r} (see `recon handovers`)")
        refused = await _refusal(conn, MAIL_DISMISS, key=key, row=row, signed=signed, to=None,
                                 note=note, stake={}, max_age=max_age, party=party)
        if refused is None:
            await bounces.dismiss(conn, key, signed.by, note)
    if refused is not None:
        raise Refused(f"dismiss of {key} refused: {refused}")
    return f"delivery handover for {key} closed: {note}"
