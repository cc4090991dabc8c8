"""The pure rules of signed requests (recon/domain/requests.py): what an undo, a redo or a mail
answer signs, the verdict on one, and the key a spent signature is kept under."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from recon.domain.requests import (
    MAIL_RESEND,
    REDO,
    UNDO,
    canonical_mail,
    canonical_request,
    judge,
    signature_digest,
)
from recon.domain.signing import new_private_key, raw_public, sign, verifies

SIGNED_AT = "2026-10-14T03:00:00+00:00"
RECEIVED = datetime(2026, 10, 14, 3, 5, tzinfo=UTC)
# The order of the group Ed25519 works in: S + L is the same point, another byte string.
ED25519_L = 2**252 + 27742317777372353535851937790883648493


@dataclass
class _Signer:
    name: str = "asha"
    public_key: bytes = b""
    active: bool = True
    revoked_at: datetime | None = None
    limit_paise: int | None = None


def _undo(**change) -> bytes:
    fields = dict(run="recon-2026-10-13-ldh", supplier=None, references=["b", "a"],
                  reason="wrong night", by="asha", signed_at=SIGNED_AT)
    fields.update(change)
    return canonical_request(UNDO, **fields)


def test_each_purpose_signs_its_own_sorted_compact_json() -> None:
    assert _undo().decode() == (
        '{"by":"asha","purpose":"recon-undo/1","reason":"wrong night","references":["b","a"],'
        '"run":"recon-2026-10-13-ldh","signed_at":"2026-10-14T03:00:00+00:00","supplier":null}')
    redo = json.loads(canonical_request(REDO, run="r", supplier="S1", references=[], reason="x",
                                        by="asha", signed_at=SIGNED_AT))
    assert (redo["purpose"], redo["supplier"], redo["references"]) == (REDO, "S1", [])
    mail = json.loads(canonical_mail(MAIL_RESEND, key="k", to=None, note="", by="asha",
                                     signed_at=SIGNED_AT))
    assert mail == {"by": "asha", "key": "k", "note": "", "purpose": MAIL_RESEND,
                    "signed_at": SIGNED_AT, "to": None}
    with pytest.raises(ValueError):
        canonical_request(MAIL_RESEND, run="r", supplier=None, references=[], reason="",
                          by="a", signed_at=SIGNED_AT)


def test_a_request_signature_is_good_for_its_purpose_and_fields_only() -> None:
    key = new_private_key()
    signature = sign(key, _undo())
    assert verifies(raw_public(key), _undo(), signature)
    for changed in (dict(run="recon-x"), dict(supplier="S1"), dict(references=["a", "b"]),
                    dict(reason="x"), dict(by="ravi"), dict(signed_at="2026-10-14T03:00:01+00:00")):
        assert not verifies(raw_public(key), _undo(**changed), signature), changed
    as_redo = canonical_request(REDO, run="recon-2026-10-13-ldh", supplier=None,
                                references=["b", "a"], reason="wrong night", by="asha",
                                signed_at=SIGNED_AT)
    assert not verifies(raw_public(key), as_redo, signature), "an undo's signature is no redo's"


def _judge(signer: _Signer | None, verified: bool = True, stake: int | dict = 0, **more):
    fields = dict(by="asha", signer=signer, verified=verified, signed_at=SIGNED_AT,
                  signature="c2ln", received_at=RECEIVED, max_age=timedelta(minutes=15),
                  stake={"INR": stake} if isinstance(stake, int) else stake)
    fields.update(more)
    return judge(UNDO, **fields)


def test_the_verdict_refuses_unsigned_unknown_forged_revoked_stale_and_over_limit() -> None:
    assert "unsigned undo" in _judge(_Signer(), signature="").refused
    assert "not an approver" in _judge(None).refused
    assert "forged" in _judge(_Signer(), verified=False).refused
    revoked = _judge(_Signer(active=False, revoked_at=RECEIVED))
    assert "revoked" in revoked.refused and revoked.approver == "asha"
    assert "stale" in _judge(_Signer(), received_at=RECEIVED + timedelta(minutes=20)).refused
    over = _judge(_Signer(limit_paise=100), stake=101)
    assert "over asha's limit" in over.refused and over.stake_paise == 101
    ok = _judge(_Signer(limit_paise=100), stake=100)
    assert (ok.refused, ok.approver, ok.stake_paise) == ("", "asha", 100)


def test_a_limit_in_rupees_never_weighs_another_currency() -> None:
    """An approver's limit is ₹: cents are not paise, and no rate is assumed, so a stake in
    another currency is over every limit set; an approver without a limit may take it."""
    euros = _judge(_Signer(limit_paise=10**12), stake={"EUR": 800})
    assert euros.refused == ("over asha's limit: this undo moves €8.00, asha may decide up to "
                             "₹10,00,00,00,000 (a ₹ limit cannot weigh another currency: no rate "
                             "is assumed)"), euros.refused
    assert _judge(_Signer(limit_paise=None), stake={"EUR": 800}).refused == ""


def test_a_spent_signature_is_known_by_its_bytes_however_it_is_spelled() -> None:
    key = new_private_key()
    signature = sign(key, _undo())
    raw = base64.b64decode(signature)
    # base64 leaves spare bits in the last character before '==': another spelling, same bytes
    last = signature[-3]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    respelled = signature[:-3] + alphabet[alphabet.index(last) ^ 1] + "=="
    assert respelled != signature and base64.b64decode(respelled) == raw
    assert signature_digest(respelled) == signature_digest(signature)
    assert signature_digest("not base64!") is None
    # A second byte string for the same signature (S + L) does not verify at all.
    s = int.from_bytes(raw[32:], "little") + ED25519_L
    malleated = base64.b64encode(raw[:32] + s.to_bytes(32, "little")).decode()
    assert not verifies(raw_public(key), _undo(), malleated)
