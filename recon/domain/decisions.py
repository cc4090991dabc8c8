"""Signed decisions: what an approver signs, how big it may be, and what the check answers.

Temporal's client identity is self-declared and its default authorizer lets every caller send an
Update, so who decided is proven by the decision itself: the approver signs the canonical JSON
below with an Ed25519 key whose public half is on record in Postgres (`approvers`), and the
workflow has an activity check it there before it acts (docs/design.md §3, "Signed decisions").
Everything here is pure: the workflow's validator uses the bounds, the CLI builds the payload,
the activity checks it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from recon.domain.models import PasskeyProof
from recon.domain.money import BASE_CURRENCY, rupees

# What a decision may hold (the Update's validator refuses more, before anything is written).
MAX_BY = 64  # an approver's name
MAX_NOTE = 500
MAX_PARK = 100  # invoices one decision may park
MAX_INVOICE_NO = 64
MAX_SIGNATURE = 100  # base64 of 64 bytes is 88 characters (an ES256 DER signature: at most 96)
MAX_PASSKEY_FIELD = 2048  # base64url of a credential id, authenticator data or client data
MAX_SIGNED_AT = 40
# A refused decision is recorded (Postgres and the run's history); beyond this many on one
# handover only a decision whose signature verifies in the workflow is checked (and recorded),
# so a flood grows neither the history nor Postgres and never locks the night.
MAX_REFUSED_PER_HANDOVER = 20
# How many ignored decisions the run's memo keeps (with a count of all of them).
IGNORED_KEPT = 5
# A signature older than the worker's RECON_DECISION_MAX_AGE (against the time the run received
# it) is stale; one dated more than FUTURE_SKEW ahead of it is refused too (a clock far off, or a
# signature made for later).
FUTURE_SKEW = timedelta(seconds=60)

PURPOSE = "recon-decision/1"  # a signature over a decision is never valid for anything else


def canonical_decision(*, run: str, handover_no: int, decision: str, by: str, note: str,
                       park: list[str], signed_at: str) -> bytes:
    """The bytes an approver signs: JSON with sorted keys, no spaces, ASCII only (every other
    character as \\uXXXX), UTF-8. `park` is sorted and without repeats, as the CLI sends it."""
    body = {
        "by": by, "decision": decision, "handover_no": handover_no, "note": note,
        "park": sorted(set(park)), "purpose": PURPOSE, "run": run, "signed_at": signed_at,
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def signing_time(now: datetime) -> str:
    """`signed_at` as the CLI writes it: UTC, whole seconds, ISO 8601."""
    return now.replace(microsecond=0).isoformat()


def staleness(signed_at: str, received_at: datetime, max_age: timedelta) -> str | None:
    """Why a signing time cannot be taken, or None: unreadable, too old, or in the future."""
    try:
        signed = datetime.fromisoformat(signed_at)
    except ValueError:
        return f"signed_at {signed_at[:MAX_SIGNED_AT]!r} is not an ISO 8601 time"
    if signed.tzinfo is None:
        return "signed_at carries no time zone"
    age = received_at - signed
    if age > max_age:
        return (f"stale: signed at {signed.isoformat()}, {int(age.total_seconds() // 60)} min "
                f"before it reached the run (at most {int(max_age.total_seconds() // 60)} min): "
                f"sign it again")
    if -age > FUTURE_SKEW:
        return f"signed at {signed.isoformat()}, ahead of the run's clock: check your clock"
    return None


def over_limit(stake: Mapping[str, int], limit_paise: int | None) -> bool:
    """An approver's limit is an amount in ₹. A stake in another currency cannot be weighed
    against it (no rate is assumed, none is read), so any such stake is over every limit set:
    only an approver without a limit may take it."""
    if limit_paise is None:
        return False
    return stake.get(BASE_CURRENCY, 0) > limit_paise or any(
        v for c, v in stake.items() if c != BASE_CURRENCY)


def stake_needs_four_eyes(decision: str, park: list[str], stake: Mapping[str, int],
                          four_eyes_paise: int) -> bool:
    """`needs_four_eyes` on a stake per currency: its ₹ part against the ₹ amount, and any part in
    another currency as above it (for the same reason as `over_limit`)."""
    elsewhere = any(v for c, v in stake.items() if c != BASE_CURRENCY)
    return needs_four_eyes(decision, park, stake.get(BASE_CURRENCY, 0), four_eyes_paise) or (
        bool(four_eyes_paise) and elsewhere and (decision == "resume" or bool(park)))


def needs_four_eyes(decision: str, park: list[str], stake_paise: int,
                    four_eyes_paise: int) -> bool:
    """Above the four-eyes amount (0 = off), a decision that sends debit notes (`resume`) or
    parks invoices needs two different approvers."""
    return bool(four_eyes_paise) and stake_paise > four_eyes_paise and \
        (decision == "resume" or bool(park))


class DecisionCheck(BaseModel):
    """What the workflow asks the signature check: the decision as it arrived, and where."""

    check_id: str  # workflow.uuid4(): a retried check records one refusal, not two
    workflow_id: str  # the run that waits (the night, or a redo of it): what was signed
    # its first execution's run id (kept by a reset): a signature is spent on one execution's
    # handover; empty from runs that asked before signatures were spent
    execution: str = ""
    night: str  # whose rows the money at stake is read from (a redo's night)
    supplier_id: str | None = None  # a redo of one supplier weighs that supplier only
    handover_no: int
    via: str  # "update" or "signal"
    received_at: str  # workflow.now() when it arrived: staleness is judged against it
    decision: str
    by: str
    note: str = ""
    park: list[str] = Field(default_factory=list)
    signed_at: str = ""
    signature: str = ""
    passkey: PasskeyProof | None = None  # a passkey's assertion instead of an Ed25519 signature
    # four eyes: the approval already on record for this handover, waiting for a second one
    first_approver: str = ""
    first_decision: str = ""
    first_park: list[str] = Field(default_factory=list)


class PasskeyBook(BaseModel):
    """The active approvers' passkeys, as a run past the refusal cap screens a passkey decision
    against them (workflows/decisions.py): credential id (base64url) to [approver, COSE public
    key (base64url)], and the worker's desk origin and RP id the assertion must have been made
    for. The counter is not screened here; the check activity takes it."""

    origin: str
    rp_id: str
    keys: dict[str, list[str]] = Field(default_factory=dict)


class DecisionVerdict(BaseModel):
    """The check's answer. `refused` empty: take it (or, with `first_of_two`, record it as the
    first of two approvals)."""

    refused: str = ""
    approver: str = ""  # the key's owner, when the signature verified
    stake_paise: int = 0  # the ₹ part
    stake_words: str = ""  # the whole stake per currency ("₹200, €8.00"); empty in older results
    first_of_two: bool = False
    confirms: str = ""  # the first approver this decision confirms (four eyes)


def four_eyes(c: DecisionCheck, name: str, stake: int, words: str = "") -> DecisionVerdict:
    """Above RECON_FOUR_EYES_PAISE: the first approval waits for a second, different approver
    who signs the same decision and park list (the note may differ). `stake` is the ₹ part;
    `words` the whole stake as people read it, per currency."""
    if not c.first_approver:
        return DecisionVerdict(approver=name, stake_paise=stake, stake_words=words,
                               first_of_two=True)
    if c.first_approver == name:
        return DecisionVerdict(approver=name, stake_paise=stake, refused=(
            f"four eyes: {words or rupees(stake)} at stake needs a second approver; {name} already "
            f"approved this handover"))
    if (c.first_decision, sorted(c.first_park)) != (c.decision, sorted(c.park)):
        parked = f" parking {', '.join(c.first_park)}" if c.first_park else ""
        return DecisionVerdict(approver=name, stake_paise=stake, refused=(
            f"four eyes: {c.first_approver} approved {c.first_decision}{parked}; a second "
            f"approval must be the same decision"))
    return DecisionVerdict(approver=name, stake_paise=stake, confirms=c.first_approver)
