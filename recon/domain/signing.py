"""Ed25519 keys and signatures of approvers, as bytes in and bytes out (no files, no I/O).

Private keys travel as unencrypted PKCS#8 PEM (the file `recon approvers add` writes, mode
0600); public keys as SubjectPublicKeyInfo PEM (what `--public-key` reads, e.g. from
`openssl pkey -in key.pem -pubout`) and are stored as their 32 raw bytes. Signatures are the
64-byte Ed25519 signature of `decisions.canonical_decision`, in standard base64. Not imported
by workflow code but for `verifies`: a run that has refused many decisions verifies one itself
before it asks the check activity (workflows/decisions.py, DecisionDesk.screen).
"""

from __future__ import annotations

import base64
import binascii

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

PUBLIC_KEY_BYTES = 32


class KeyUnreadable(ValueError):
    """A key file that is not an Ed25519 key of the expected kind."""


def new_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def private_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def read_private_pem(data: bytes) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyUnreadable(f"not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyUnreadable(f"a {type(key).__name__.removesuffix('PrivateKey')} key, "
                            "not Ed25519")
    return key


def read_public_pem(data: bytes) -> bytes:
    """The 32 raw bytes of an Ed25519 public key in PEM."""
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise KeyUnreadable(f"not a PEM public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyUnreadable(f"a {type(key).__name__.removesuffix('PublicKey')} key, not Ed25519")
    return raw_public(key)


def raw_public(key: Ed25519PublicKey | Ed25519PrivateKey) -> bytes:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def fingerprint(raw: bytes) -> str:
    """A short name for a public key in listings: the first 16 base64 characters."""
    return base64.b64encode(raw).decode()[:16]


def sign(key: Ed25519PrivateKey, payload: bytes) -> str:
    return base64.b64encode(key.sign(payload)).decode()


def verifies(public_raw: bytes | None, payload: bytes, signature: str) -> bool:
    """True only for a well-formed signature of exactly these bytes by this key."""
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(raw) != 64 or not public_raw or len(public_raw) != PUBLIC_KEY_BYTES:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public_raw).verify(raw, payload)
    except InvalidSignature:
        return False
    return True
