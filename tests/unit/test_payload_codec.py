"""The payload codec and its keyring, without a server: what a payload looks like sealed, which
keyrings are refused (one line, no key material in it), and that rotation keeps old payloads
readable."""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload

from recon.domain.errors import KeyringRefused, PayloadUnreadable, UnknownPayloadKey
from recon.runtime.codec import ENCODING, KEY_ID_FIELD, NONCE_BYTES, PayloadCipher
from recon.runtime.keyring import keyring_from, new_key_line, parse_keyring, write_key_file
from recon.runtime.temporal_client import data_converter

KEY_A = "a:" + base64.b64encode(bytes(range(32))).decode()
KEY_B = "b:" + base64.b64encode(bytes(range(32, 64))).decode()
NOTE = b'{"note":"prices agreed with Sharma Traders, \\u20b92,71,500"}'


def _plain() -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=NOTE)


def test_a_sealed_payload_hides_data_and_encoding_and_names_its_key() -> None:
    cipher = PayloadCipher(parse_keyring([KEY_A], "test"), "default")
    sealed = cipher.seal(_plain())
    assert dict(sealed.metadata) == {"encoding": ENCODING, KEY_ID_FIELD: b"a"}
    assert b"Sharma" not in sealed.data and b"json/plain" not in sealed.data
    assert len(sealed.data) == NONCE_BYTES + len(_plain().SerializeToString()) + 16  # GCM tag
    assert cipher.open(sealed) == _plain()


def test_each_seal_draws_a_fresh_nonce() -> None:
    cipher = PayloadCipher(parse_keyring([KEY_A], "test"), "default")
    first, second = cipher.seal(_plain()), cipher.seal(_plain())
    assert first.data[:NONCE_BYTES] != second.data[:NONCE_BYTES]
    assert first.data != second.data


def test_rotation_keeps_older_payloads_readable_and_seals_with_the_new_key() -> None:
    old = PayloadCipher(parse_keyring([KEY_A], "test"), "default").seal(_plain())
    rotated = PayloadCipher(parse_keyring([KEY_B, KEY_A], "test"), "default")
    assert rotated.open(old) == _plain()
    assert rotated.seal(_plain()).metadata[KEY_ID_FIELD] == b"b"


def test_a_retired_key_is_named_when_a_payload_still_needs_it() -> None:
    old = PayloadCipher(parse_keyring([KEY_A], "test"), "default").seal(_plain())
    with pytest.raises(UnknownPayloadKey, match=r"key 'a', which is not in the keyring \(known: b\)"):
        PayloadCipher(parse_keyring([KEY_B], "test"), "default").open(old)


def test_the_namespace_is_bound_and_tampering_is_detected() -> None:
    keyring = parse_keyring([KEY_A], "test")
    sealed = PayloadCipher(keyring, "control").seal(_plain())
    with pytest.raises(PayloadUnreadable, match="does not open in namespace 'chaos'"):
        PayloadCipher(keyring, "chaos").open(sealed)
    altered = Payload(metadata=sealed.metadata, data=sealed.data[:-1] + bytes([sealed.data[-1] ^ 1]))
    with pytest.raises(PayloadUnreadable):
        PayloadCipher(keyring, "control").open(altered)


def test_payloads_written_before_encryption_pass_through() -> None:
    cipher = PayloadCipher(parse_keyring([KEY_A], "test"), "default")
    assert cipher.open(_plain()) == _plain()


@pytest.mark.parametrize(("text", "message"), [
    (" ", "entry 1 must be id:base64-key"),
    ("nokey", "entry 1 must be id:base64-key"),
    ("a b:AAAA", "entry 1 must be id:base64-key"),
    ("k1:not base64!", "entry 1 (key 'k1') is not valid base64"),
    ("k1:" + base64.b64encode(b"x" * 16).decode(), "is 16 bytes; a payload key is 32 bytes"),
    (f"{KEY_A},{KEY_A}", "names key 'a' twice"),
    (f"{KEY_A},", "entry 2 must be id:base64-key"),
])
def test_malformed_keys_are_refused_in_one_line_without_the_key(text: str, message: str) -> None:
    with pytest.raises(KeyringRefused, match=re.escape(message)) as refused:
        keyring_from(text, None)
    assert "\n" not in str(refused.value)
    assert KEY_A.split(":")[1] not in str(refused.value)


def test_the_keyring_is_never_printed_with_its_keys() -> None:
    keyring = parse_keyring([KEY_A, KEY_B], "test")
    assert repr(keyring) == "Keyring(current='a', ids=['a', 'b'])"
    assert KEY_A.split(":")[1] not in repr(keyring)


def test_a_key_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    write_key_file(path, [new_key_line("k2"), KEY_A])
    assert (path.stat().st_mode & 0o777) == 0o600
    keyring = keyring_from(None, str(path))
    assert keyring is not None and keyring.ids == ("k2", "a")
    os.chmod(path, 0o640)
    with pytest.raises(KeyringRefused, match=r"can be read by others \(mode 0640\); run `chmod 600"):
        keyring_from(None, str(path))
    with pytest.raises(KeyringRefused, match="cannot be read"):
        keyring_from(None, str(tmp_path / "missing"))
    with pytest.raises(KeyringRefused, match="not both"):
        keyring_from(KEY_A, str(path))


def test_no_keyring_means_the_converter_of_before() -> None:
    from temporalio.contrib.pydantic import pydantic_data_converter

    assert data_converter(None, "default") is pydantic_data_converter
    sealed = data_converter(parse_keyring([KEY_A], "test"), "default")
    assert sealed.payload_codec is not None
    assert type(sealed.failure_converter).__name__ == "DefaultFailureConverterWithEncodedAttributes"


async def test_a_failure_travels_with_its_message_and_stack_encoded() -> None:
    from temporalio.api.failure.v1 import Failure
    from temporalio.exceptions import ApplicationError

    converter = data_converter(parse_keyring([KEY_A], "test"), "default")
    failure = Failure()
    try:
        raise ApplicationError("ledger refused S042: ₹2,71,500 over the cap", type="Refused")
    except ApplicationError as exc:
        await converter.encode_failure(exc, failure)
    raw = failure.SerializeToString()
    assert b"S042" not in raw and b"ledger refused" not in raw and b"test_payload_codec" not in raw
    assert failure.message == "Encoded failure"
    back = await converter.decode_failure(failure)
    assert "ledger refused S042" in str(back)


def test_none_stays_none_so_the_server_still_clears_a_memo_key() -> None:
    cipher = PayloadCipher(parse_keyring([KEY_A], "test"), "default")
    null = Payload(metadata={"encoding": b"binary/null"})
    assert cipher.seal(null) == null and cipher.open(null) == null
