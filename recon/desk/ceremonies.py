"""The desk's two WebAuthn ceremonies besides a decision: enrolling a passkey with a one-time
token, and signing in. Both verified with the `webauthn` package; user verification required.

Sign-in names no approver before the passkey answers (discoverable credentials, no
allowCredentials list), and every refusal reads the same, so the desk enumerates nobody.
"""

from __future__ import annotations

import hashlib
import secrets

import asyncpg
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_registration_response,
)
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from recon.domain.models import PasskeyProof
from recon.domain.passkeys import PasskeyRefused, unb64url, verify_assertion
from recon.ops.passkeys import token_digest
from recon.store import approvers
from recon.store import passkeys as store

SIGN_IN_REFUSED = "sign-in refused: this passkey belongs to no active approver, or did not verify"
ENROLL_REFUSED = "this enrollment link is used, expired or unknown: ask an admin for a new one"


class CeremonyRefused(ValueError):
    """One line for the page."""


async def enrollment_options(pool: asyncpg.Pool, token: str, rp_id: str) -> tuple[str, bytes, bytes]:
    """(options JSON, challenge, token digest) for registering a passkey with `token`."""
    digest = token_digest(token)
    name = await store.enrollment_open(pool, digest)
    if name is None:
        raise CeremonyRefused(ENROLL_REFUSED)
    existing = await store.of_approver(pool, name)
    challenge = secrets.token_bytes(32)
    options = generate_registration_options(
        rp_id=rp_id, rp_name="recon finance desk", user_name=name,
        user_id=hashlib.sha256(f"recon-approver:{name}".encode()).digest()[:16],
        challenge=challenge,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED,
            user_verification=UserVerificationRequirement.REQUIRED),
        exclude_credentials=[PublicKeyCredentialDescriptor(id=k.credential_id) for k in existing])
    return options_to_json(options), challenge, digest


async def enroll(pool: asyncpg.Pool, credential: dict, *, challenge: bytes, token_sha256: bytes,
                 rp_id: str, origin: str) -> str:
    """Register the passkey and spend the token; the approver's name."""
    try:
        verified = verify_registration_response(
            credential=credential, expected_challenge=challenge, expected_rp_id=rp_id,
            expected_origin=origin, require_user_verification=True)
    except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
        raise CeremonyRefused(f"the passkey was not registered: {exc}") from None
    transports = [str(t) for t in (credential.get("response", {}).get("transports") or [])
                  if isinstance(t, str)][:8]
    name = await store.enroll(pool, token_sha256, verified.credential_id,
                              verified.credential_public_key, verified.sign_count, transports)
    if name is None:
        raise CeremonyRefused(ENROLL_REFUSED)
    return name


def sign_in_options(rp_id: str) -> tuple[str, bytes]:
    challenge = secrets.token_bytes(32)
    options = generate_authentication_options(
        rp_id=rp_id, challenge=challenge,
        user_verification=UserVerificationRequirement.REQUIRED)
    return options_to_json(options), challenge


def proof_of(assertion: dict) -> tuple[PasskeyProof, bytes]:
    """The browser's assertion (base64url fields) as a proof and the signature's bytes."""
    try:
        response = assertion["response"]
        proof = PasskeyProof(credential_id=str(assertion["id"]),
                             authenticator_data=str(response["authenticatorData"]),
                             client_data_json=str(response["clientDataJSON"]))
        return proof, unb64url(str(response["signature"]))
    except (KeyError, TypeError, PasskeyRefused):
        raise CeremonyRefused("not a passkey assertion") from None


async def sign_in(pool: asyncpg.Pool, assertion: dict, *, challenge: bytes, rp_id: str,
                  origin: str) -> tuple[str, bytes]:
    """The active approver whose passkey (not revoked) answered the challenge, and that
    passkey's credential id; the counter must grow."""
    proof, signature = proof_of(assertion)
    try:
        credential_id = unb64url(proof.credential_id)
    except PasskeyRefused:
        raise CeremonyRefused(SIGN_IN_REFUSED) from None
    key = await store.by_credential(pool, credential_id)
    person = key and await approvers.by_name(pool, key.approver)
    if key is None or key.revoked_at is not None or person is None or not person.active:
        raise CeremonyRefused(SIGN_IN_REFUSED)
    try:
        count = verify_assertion(proof, signature, challenge=challenge, public_key=key.public_key,
                                 rp_id=rp_id, origin=origin)
    except PasskeyRefused:
        raise CeremonyRefused(SIGN_IN_REFUSED) from None
    if not await store.advance_counter(pool, credential_id, count):
        raise CeremonyRefused("sign-in refused: this passkey's counter did not grow (a cloned "
                              "authenticator?)")
    return person.name, credential_id


async def decision_options(pool: asyncpg.Pool, approver: str, challenge: bytes,
                           rp_id: str) -> str:
    """Options for a decision's or a signed request's assertion: the challenge is the hash of
    its canonical form, and only the signed-in approver's passkeys may answer."""
    keys = await store.of_approver(pool, approver)
    if not keys:
        raise CeremonyRefused(f"{approver} holds no passkey on record")
    options = generate_authentication_options(
        rp_id=rp_id, challenge=challenge,
        allow_credentials=[PublicKeyCredentialDescriptor(id=k.credential_id) for k in keys],
        user_verification=UserVerificationRequirement.REQUIRED)
    return options_to_json(options)
