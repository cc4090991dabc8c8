"""Signed requests: undo, redo and the answers to a refused mail move money too, so they are signed
like decisions (docs/design.md §3, "Signed requests"), and no signature is spent twice.

A decision answers a handover a run is waiting on; a request starts something (an undo, a redo) or
closes a delivery handover (resend, dismiss). Each purpose has its own canonical JSON, signed with
the approver's Ed25519 key or, on the desk, by a passkey whose challenge is the SHA-256 of the same
bytes (recon.store.passkeys.passkey_problem, shared with decisions); the check of either kind answers
the same few questions, here as pure functions over facts the caller read from Postgres: who signed,
is the key active, is the signature fresh, is the money at stake within the signer's limit, and was
this very signature used before for something else. Imported by workflow code (the models), the
activity that checks an undo or a redo, and the mail commands."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import BaseModel, Field

from recon.domain.decisions import over_limit, staleness
from recon.domain.models import PasskeyProof
from recon.domain.money import BASE_CURRENCY, amounts, rupees

UNDO = "recon-undo/1"
REDO = "recon-redo/1"
MAIL_RESEND = "recon-mail-resend/1"
MAIL_DISMISS = "recon-mail-dismiss/1"
WHAT = {UNDO: "undo", REDO: "redo", MAIL_RESEND: "mail resend", MAIL_DISMISS: "mail dismiss"}

# What a refusal keeps of the text a request carried (a raw start may carry anything).
KEPT_BY = 64
KEPT_REASON = 500


def _canonical(body: dict) -> bytes:
    """JSON with sorted keys, no spaces, ASCII only (\\uXXXX beyond), UTF-8: what is signed."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def canonical_request(purpose: str, *, run: str, supplier: str | None, references: list[str],
                      reason: str, by: str, signed_at: str) -> bytes:
    """The bytes an approver signs for an undo or a redo. `references` are signed as given
    (always present, [] when the request names none; a redo names none); `supplier` is null for
    the whole night."""
    if purpose not in (UNDO, REDO):
        raise ValueError(f"not an undo or redo purpose: {purpose!r}")
    return _canonical({"by": by, "purpose": purpose, "reason": reason,
                       "references": list(references), "run": run, "signed_at": signed_at,
                       "supplier": supplier})


def canonical_mail(purpose: str, *, key: str, to: str | None, note: str, by: str,
                   signed_at: str) -> bytes:
    """The bytes an approver signs to resend a refused message (to `to`, or its own address when
    null) or to dismiss its delivery handover."""
    if purpose not in (MAIL_RESEND, MAIL_DISMISS):
        raise ValueError(f"not a mail purpose: {purpose!r}")
    return _canonical({"by": by, "key": key, "note": note, "purpose": purpose,
                       "signed_at": signed_at, "to": to})


class SignedRequest(BaseModel):
    """Who signed a request, when, and the signature (base64): what the CLI adds to a request."""

    by: str
    signed_at: str
    signature: str
    passkey: PasskeyProof | None = None  # signed by a passkey on the desk, not an Ed25519 key


class RequestCheck(BaseModel):
    """What a workflow asks the check of an undo or a redo: the request as it arrived."""

    check_id: str  # workflow.uuid4(): a retried check records one refusal, not two
    purpose: str
    target: str  # the undo's or redo's own workflow id
    execution: str  # its first execution's run id: one use of a signature is one execution
    run: str  # the night the request acts on
    supplier_id: str | None = None
    references: list[str] = Field(default_factory=list)
    reason: str = ""
    by: str = ""
    signed_at: str = ""
    signature: str = ""
    passkey: PasskeyProof | None = None  # a passkey's assertion instead of an Ed25519 signature
    received_at: str  # workflow.now() when the workflow began: staleness is judged against it


class RequestVerdict(BaseModel):
    """`refused` empty: go on; `approver` is the key's owner, what goes on record."""

    refused: str = ""
    approver: str = ""
    stake_paise: int = 0


class Signer(Protocol):
    """What the check needs of an approver on record (recon.store.approvers.Approver)."""

    name: str
    public_key: bytes
    active: bool
    revoked_at: datetime | None
    limit_paise: int | None


def signature_digest(signature: str) -> bytes | None:
    """SHA-256 of the signature's 64 bytes (not of its base64 text, which can be spelled more
    than one way): the key of `spent_signatures`. None when it is not base64 at all."""
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return None
    return hashlib.sha256(raw).digest()


def spend_target(workflow_id: str, execution: str, what: str) -> str:
    """What one use of a signature is: a handover of one execution of a run, one execution of an
    undo or a redo, one delivery handover. The same target again is the same use (a retry)."""
    return f"{workflow_id}@{execution or '-'}{what}"


def already_used(used_for: str, used_at: datetime) -> str:
    return (f"this signed decision was already used at {used_at:%Y-%m-%d %H:%M:%S %Z} "
            f"(for {used_for[:200]}): sign it again for this one")


def judge(purpose: str, *, by: str, signer: Signer | None, verified: bool, signed_at: str,
          signature: str, received_at: datetime, max_age: timedelta,
          stake: Mapping[str, int]) -> RequestVerdict:
    """The verdict on a request, from what was read: `signer` is the approver on record under
    the name it carries, `verified` whether the signature verifies against that key."""
    what = WHAT.get(purpose, purpose)
    if not signature or not signed_at:
        return RequestVerdict(refused=(
            f"unsigned {what} by {by[:KEPT_BY]!r}: it is signed by a known approver "
            f"(RECON_APPROVER_KEY or --key)"))
    if signer is None:
        return RequestVerdict(refused=f"{by[:KEPT_BY]!r} is not an approver on record")
    if not verified:
        return RequestVerdict(refused=(
            f"forged or altered: the signature does not verify against {signer.name}'s key "
            f"for this {what}"))
    name = signer.name
    if not signer.active:
        revoked = f"{signer.revoked_at:%Y-%m-%d %H:%M:%S %Z}" if signer.revoked_at else "?"
        return RequestVerdict(approver=name, refused=f"{name}'s key was revoked at {revoked}")
    stale = staleness(signed_at, received_at, max_age)
    if stale:
        return RequestVerdict(approver=name, refused=stale)
    stake_paise = stake.get(BASE_CURRENCY, 0)  # what goes on record; the rest is in the words
    if over_limit(stake, signer.limit_paise):
        return RequestVerdict(approver=name, stake_paise=stake_paise, refused=(
            f"over {name}'s limit: this {what} moves {amounts(stake)}, {name} may decide "
            f"up to {rupees(signer.limit_paise)}" + _NO_RATE * _elsewhere(stake)))
    return RequestVerdict(approver=name, stake_paise=stake_paise)


# said when a stake in another currency is refused against a ₹ limit
_NO_RATE = " (a ₹ limit cannot weigh another currency: no rate is assumed)"


def _elsewhere(stake: Mapping[str, int]) -> bool:
    return any(v for c, v in stake.items() if c != BASE_CURRENCY)
