"""AES-GCM payload encryption: what travels through Temporal is unreadable to whoever runs it.

Every payload a recon client writes (workflow and activity inputs and results, signals, updates,
queries, memo, the Web UI's summaries, failure details) is sealed whole (metadata and data, so
even its encoding and type are hidden) with the keyring's current key:

    metadata  encoding: binary/encrypted   encryption-key-id: <id>
    data      12-byte random nonce || AES-256-GCM(serialized payload), namespace as associated data

Binding the namespace means a payload copied into another namespace does not open. Only
`binary/null` (Python's None, no data) is left as it is: the server removes a memo key set to
exactly that payload (the open handover note, cleared once it is answered). A payload
that is not `binary/encrypted` is passed through unchanged on decode: histories recorded before
encryption was switched on keep replaying. Search attributes are never encoded by Temporal (they
are indexed), so recon puts only status, step, warehouse and date there.

Pure crypto, sync and async: the SDK calls the async `PayloadCodec` side, the codec server the
sync one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from recon.domain.errors import PayloadUnreadable, UnknownPayloadKey
from recon.runtime.keyring import Keyring

ENCODING = b"binary/encrypted"
NULL_ENCODING = b"binary/null"
KEY_ID_FIELD = "encryption-key-id"
NONCE_BYTES = 12
_AAD_PREFIX = b"recon-payload-v1\x00namespace="


def associated_data(namespace: str) -> bytes:
    return _AAD_PREFIX + namespace.encode("utf-8")


class PayloadCipher:
    """Seal with the current key, open with whichever key the payload names."""

    def __init__(self, keyring: Keyring, namespace: str) -> None:
        self.keyring = keyring
        self.namespace = namespace
        self._aad = associated_data(namespace)
        self._ciphers = {key_id: AESGCM(material) for key_id, material in keyring.keys}
        self._current = self._ciphers[keyring.current_id]
        self._current_id = keyring.current_id.encode("utf-8")

    def seal(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") == NULL_ENCODING and not payload.data:
            return payload  # "nothing": the server deletes a memo key set to it, so it stays as is
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._current.encrypt(nonce, payload.SerializeToString(), self._aad)
        return Payload(metadata={"encoding": ENCODING, KEY_ID_FIELD: self._current_id},
                       data=nonce + sealed)

    def open(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # written before encryption was on (or by a client without it)
        key_id = payload.metadata.get(KEY_ID_FIELD, b"").decode("utf-8", "replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise UnknownPayloadKey(
                f"payload encrypted with key {key_id!r}, which is not in the keyring "
                f"(known: {', '.join(self.keyring.ids)}): add it to RECON_PAYLOAD_KEYS")
        data = payload.data
        try:
            plain = cipher.decrypt(data[:NONCE_BYTES], data[NONCE_BYTES:], self._aad)
        except InvalidTag:
            raise PayloadUnreadable(
                f"payload encrypted with key {key_id!r} does not open in namespace "
                f"{self.namespace!r}: another namespace's, or altered") from None
        return Payload.FromString(plain)

    def seal_all(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.seal(p) for p in payloads]

    def open_all(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.open(p) for p in payloads]


class EncryptionCodec(PayloadCodec):
    """The SDK's side: each client of one namespace gets one (recon/runtime/temporal_client.py)."""

    def __init__(self, keyring: Keyring, namespace: str) -> None:
        self.cipher = PayloadCipher(keyring, namespace)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return self.cipher.seal_all(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return self.cipher.open_all(payloads)
