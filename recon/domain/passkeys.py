"""Passkeys (WebAuthn) as approvers' keys: what a passkey signs for a decision, and the check of
its assertion with the `webauthn` package (never hand-written CBOR/COSE). Pure: no I/O; the sign
counter is taken in Postgres (recon/store/passkeys.py), the only authority.

A decision's challenge is the SHA-256 of `decisions.canonical_decision`, the bytes the CLI signs
with Ed25519, so an assertion is a signature of exactly this run, handover, decision, park list,
note, approver and time: `authenticatorData || SHA-256(clientDataJSON)`, whose `challenge` is it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass

from webauthn import verify_authentication_response
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.exceptions import WebAuthnException

from recon.domain.models import PasskeyProof


@dataclass(frozen=True)
class RelyingParty:
    """Where an assertion must have been made: the desk's RP id and origin (the settings)."""

    rp_id: str
    origin: str


class PasskeyRefused(ValueError):
    """An assertion that does not verify: its one line says why."""


def challenge_of(canonical: bytes) -> bytes:
    return hashlib.sha256(canonical).digest()


def b64url(raw: bytes) -> str:
    return bytes_to_base64url(raw)


def unb64url(text: str) -> bytes:
    try:
        return base64url_to_bytes(text)
    except (ValueError, TypeError) as exc:
        raise PasskeyRefused(f"not base64url ({exc})") from None


def credential_json(proof: PasskeyProof, signature: bytes) -> dict:
    """The assertion as `verify_authentication_response` takes it."""
    return {
        "id": proof.credential_id, "rawId": proof.credential_id, "type": "public-key",
        "response": {"authenticatorData": proof.authenticator_data,
                     "clientDataJSON": proof.client_data_json,
                     "signature": b64url(signature)},
    }


def signature_bytes(signature: str) -> bytes:
    """A passkey's signature travels in `Decision.signature` as standard base64, like Ed25519's."""
    try:
        return base64.b64decode(signature, validate=True)
    except ValueError:
        raise PasskeyRefused("the signature is not base64") from None


def verify_assertion(proof: PasskeyProof, signature: bytes, *, challenge: bytes,
                     public_key: bytes, rp_id: str, origin: str) -> int:
    """The assertion's sign count, when it is this credential's signature over `challenge`, made
    for this relying party and origin with the person verified (PIN or biometrics); else
    PasskeyRefused. The counter is compared in Postgres, not here (a retried check of the same
    assertion must pass again)."""
    try:
        verified = verify_authentication_response(
            credential=credential_json(proof, signature), expected_challenge=challenge,
            expected_rp_id=rp_id, expected_origin=origin, credential_public_key=public_key,
            credential_current_sign_count=0, require_user_verification=True)
    except WebAuthnException as exc:
        raise PasskeyRefused(str(exc)) from None
    except (ValueError, TypeError, KeyError, json.JSONDecodeError) as exc:
        raise PasskeyRefused(f"not a WebAuthn assertion ({type(exc).__name__})") from None
    return verified.new_sign_count
