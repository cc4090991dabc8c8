"""The payload keyring: which AES-256 keys may open a payload, and which one seals new ones.

`RECON_PAYLOAD_KEYS` is `id:base64-key` pairs separated by commas, or `RECON_PAYLOAD_KEYS_FILE`
names a file of such pairs, one a line (blank lines and `#` comments skipped). The first key is
the *current* one: every new payload is sealed with it. The others only open what they sealed
earlier, which is how a key rotates without making one recorded history unreadable (a history
cannot be re-encrypted: Temporal keeps its events as written). docs/design.md, "Payload
encryption", says how to add and retire a key.

Everything wrong with a keyring is refused when the settings are read, in one line that names the
entry and never echoes key material: a command or worker with a bad key never starts.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from recon.domain.errors import KeyringRefused

KEY_BYTES = 32  # AES-256
KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Keyring:
    """Keys by id, in the order given; the first is current. Never printed with its keys."""

    keys: tuple[tuple[str, bytes], ...]

    @property
    def current_id(self) -> str:
        return self.keys[0][0]

    def key(self, key_id: str) -> bytes | None:
        for known, material in self.keys:
            if known == key_id:
                return material
        return None

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(key_id for key_id, _ in self.keys)

    def __repr__(self) -> str:  # settings get logged and printed; key material must not be
        return f"Keyring(current={self.current_id!r}, ids={list(self.ids)!r})"


def _entry(text: str, where: str) -> tuple[str, bytes]:
    key_id, colon, encoded = text.strip().partition(":")
    key_id = key_id.strip()
    if not colon or not KEY_ID.fullmatch(key_id):
        raise KeyringRefused(f"{where} must be id:base64-key with an id of letters, digits, '.', "
                             "'_' or '-' (up to 64)")
    try:
        material = base64.b64decode(encoded.strip().replace("-", "+").replace("_", "/"),
                                    validate=True)
    except (binascii.Error, ValueError):
        raise KeyringRefused(f"{where} (key {key_id!r}) is not valid base64") from None
    if len(material) != KEY_BYTES:
        raise KeyringRefused(f"{where} (key {key_id!r}) is {len(material)} bytes; "
                             f"a payload key is {KEY_BYTES} bytes (AES-256)")
    return key_id, material


def parse_keyring(entries: list[str], source: str) -> Keyring:
    """`entries` in order (the first is current); `source` names where they came from."""
    keys: list[tuple[str, bytes]] = []
    for number, text in enumerate(entries, start=1):
        key_id, material = _entry(text, f"{source} entry {number}")
        if any(known == key_id for known, _ in keys):
            raise KeyringRefused(f"{source} names key {key_id!r} twice")
        keys.append((key_id, material))
    if not keys:
        raise KeyringRefused(f"{source} holds no key")
    return Keyring(tuple(keys))


def read_key_file(path: Path) -> Keyring:
    """The file must be a regular file only its owner can read: a key others can read is a key
    the cluster's operators (or anyone on the host) may hold."""
    source = f"RECON_PAYLOAD_KEYS_FILE {path}"
    try:
        info = path.stat()
    except OSError as exc:
        raise KeyringRefused(f"{source} cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise KeyringRefused(f"{source} is not a regular file")
    if info.st_mode & 0o077:
        raise KeyringRefused(f"{source} can be read by others (mode {stat.S_IMODE(info.st_mode):04o});"
                             f" run `chmod 600 {path}`")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyringRefused(f"{source} cannot be read: {exc}") from None
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return parse_keyring(lines, source)


def keyring_from(keys: str | None, keys_file: str | None) -> Keyring | None:
    """The keyring the settings name, or None (no encryption: nothing changes)."""
    if keys and keys_file:
        raise KeyringRefused("set RECON_PAYLOAD_KEYS or RECON_PAYLOAD_KEYS_FILE, not both")
    if keys:
        return parse_keyring(keys.split(","), "RECON_PAYLOAD_KEYS")
    if keys_file:
        return read_key_file(Path(keys_file).expanduser())
    return None


def new_key_line(key_id: str) -> str:
    """`id:base64` of a fresh random key, for `recon dev --encrypt` and people rotating by hand."""
    if not KEY_ID.fullmatch(key_id):
        raise KeyringRefused(f"not a key id: {key_id!r}")
    return f"{key_id}:{base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode('ascii')}"


def write_key_file(path: Path, lines: list[str]) -> None:
    """Created 0600 from the start (never readable by others, not even for a moment)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("# payload keys, first one current (recon/runtime/keyring.py)\n")
        handle.write("".join(f"{line}\n" for line in lines))


def keyring_env(keyring: Keyring | None, keys_file: str | None) -> dict[str, str]:
    """The variables that give a child process (a worker of `recon chaos`) the same keyring."""
    if keyring is None:
        return {}
    if keys_file:
        return {"RECON_PAYLOAD_KEYS_FILE": keys_file}
    return {"RECON_PAYLOAD_KEYS": ",".join(
        f"{key_id}:{base64.b64encode(material).decode('ascii')}" for key_id, material in keyring.keys)}
