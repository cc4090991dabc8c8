"""Managing approvers (`recon approvers add|list|revoke`) and signing decisions with their keys.

Rules (README "Approvers"):
- The first approver on record must be an admin; after that, adding or revoking an approver
  needs an active admin's key (RECON_APPROVER_KEY or --key), so a table of approvers cannot be
  grown by anyone who merely runs the CLI. The last active admin cannot be revoked.
- `add` with `--key-file PATH` makes the key pair here and writes the private key to PATH, mode
  0600, never over an existing file; with `--public-key FILE` the person made the key and only
  its public half is registered.
- A private key file readable by anyone but its owner is refused, as ssh refuses one.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from recon.domain.decisions import MAX_BY, canonical_decision, signing_time
from recon.domain.errors import DecisionRefused, Refused
from recon.domain.models import Decision
from recon.domain.money import rupees
from recon.domain.signing import (
    KeyUnreadable,
    new_private_key,
    private_pem,
    raw_public,
    read_private_pem,
    read_public_pem,
    sign,
)
from recon.store import approvers as store
from recon.store.approvers import Approver

ROLES = ("approver", "admin")
MAX_LIMIT_PAISE = 10**17  # ₹1,00,00,00,00,00,00,000: far above any night, well inside bigint
NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._@-]{{0,{MAX_BY - 1}}}")
EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,189}")


def load_key(path: Path) -> Ed25519PrivateKey:
    """An approver's private key from its PEM file; refused in one line when it is absent,
    readable by others, or not an Ed25519 private key."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"approver key {path}: not a regular file")
        if info.st_mode & 0o077:
            raise Refused(f"approver key {path} is readable by others (mode "
                          f"{stat.S_IMODE(info.st_mode):04o}): chmod 600 {path}")
        data = path.read_bytes()
    except FileNotFoundError:
        raise Refused(f"approver key {path}: no such file") from None
    except OSError as exc:
        raise Refused(f"approver key {path}: {exc.strerror}") from None
    try:
        return read_private_pem(data)
    except KeyUnreadable as exc:
        raise Refused(f"approver key {path}: {exc}") from None


async def owner_of(pool: asyncpg.Pool, key: Ed25519PrivateKey) -> Approver:
    person = await store.by_key(pool, raw_public(key))
    if person is None:
        raise Refused("the approver key belongs to no approver on record (recon approvers list)")
    return person


async def _admin(pool: asyncpg.Pool, key: Ed25519PrivateKey | None, doing: str) -> str | None:
    """The admin who authorises `doing`, or None while no admin is on record (the first one)."""
    if not await store.active_admins(pool):
        return None
    if key is None:
        raise Refused(f"{doing} needs an admin's key: set RECON_APPROVER_KEY or pass --key")
    person = await owner_of(pool, key)
    if not person.active or person.role != "admin":
        raise Refused(f"{doing} needs an active admin's key; {person.name} is "
                      f"{'a revoked ' if not person.active else 'an '}{person.role}")
    return person.name


def _write_private_key(path: Path, key: Ed25519PrivateKey) -> None:
    """Create PATH readable by its owner only; never replace a file that is there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise Refused(f"--key-file {path} already exists: not overwritten") from None
    except OSError as exc:
        raise Refused(f"--key-file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "wb") as out:
        os.fchmod(out.fileno(), 0o600)  # whatever the umask said
        out.write(private_pem(key))


async def add_approver(
    pool: asyncpg.Pool, name: str, email: str, role: str, limit_paise: int | None, *,
    key_file: Path | None, public_key_file: Path | None,
    admin_key: Ed25519PrivateKey | None, passkey: bool = False,
) -> Approver:
    if not NAME.fullmatch(name):
        raise Refused(f"approver name {name!r}: up to {MAX_BY} letters, digits, '.', '_', "
                      f"'@' or '-', starting with a letter or digit")
    if not EMAIL.fullmatch(email):
        raise Refused(f"--email {email!r} is not an e-mail address")
    if limit_paise is not None and not 0 <= limit_paise <= MAX_LIMIT_PAISE:
        raise Refused(f"--limit must be ₹0 to {rupees(MAX_LIMIT_PAISE)}")
    if role not in ROLES:
        raise Refused(f"--role must be approver or admin, got {role!r}")
    if key_file is not None and public_key_file is not None:
        raise Refused("give --key-file PATH (a new key pair) or --public-key FILE (a key "
                      "the person made), not both")
    if key_file is None and public_key_file is None and not passkey:
        raise Refused("give --key-file PATH (a new key pair), --public-key FILE (a key the "
                      "person made) or --passkey (registered on the desk), or a key and --passkey")
    if not await store.active_admins(pool) and role != "admin":
        raise Refused("the first approver on record must be an admin (--role admin)")
    await _admin(pool, admin_key, f"adding {name}")
    if await store.by_name(pool, name) is not None:
        raise Refused(f"approver {name} is already on record (names are never reused)")
    if public_key_file is not None:
        try:
            public = read_public_pem(public_key_file.read_bytes())
        except OSError as exc:
            raise Refused(f"--public-key {public_key_file}: {exc.strerror}") from None
        except KeyUnreadable as exc:
            raise Refused(f"--public-key {public_key_file}: {exc}") from None
        added = await store.add(pool, name, email, role, public, limit_paise)
        if added is None:
            if await store.by_key(pool, public) is None:
                await _one_person(pool, email)
            raise Refused(f"that public key is already registered (or {name} was just added)")
        return added
    if key_file is None:  # a passkey only: registered later on the desk
        added = await store.add(pool, name, email, role, None, limit_paise)
        if added is None:
            await _one_person(pool, email)
            raise Refused(f"approver {name} is already on record")
        return added
    if key_file.exists() or key_file.is_symlink():
        raise Refused(f"--key-file {key_file} already exists: not overwritten")
    key = new_private_key()
    async with pool.acquire() as conn, conn.transaction():
        added = await store.add(conn, name, email, role, raw_public(key), limit_paise)
        if added is None:
            await _one_person(conn, email)
            raise Refused(f"approver {name} is already on record")
        _write_private_key(key_file, key)  # a failure here rolls the row back
    return added


async def _one_person(conn: asyncpg.Connection | asyncpg.Pool, email: str) -> None:
    """Four eyes means two people: no second active approver under one e-mail address."""
    other = await store.active_with_email(conn, email)
    if other is not None:
        raise Refused(f"--email {email}: {other} is an active approver with that address; two "
                      f"approvers of one person would make four eyes one pair (revoke {other} "
                      f"first if it is the same person's old key)")


async def passkey_link(pool: asyncpg.Pool, name: str, admin_key: Ed25519PrivateKey | None,
                       origin: str) -> str:
    """A new one-time link for an active approver to register a (further) passkey on the desk:
    an admin's act, like adding the approver."""
    from recon.ops.passkeys import enrollment_link

    person = await store.by_name(pool, name)
    if person is None:
        raise Refused(f"no approver {name!r} on record")
    if not person.active:
        raise Refused(f"{name} was revoked at {person.revoked_at:%Y-%m-%d %H:%M:%S}: no passkey")
    await _admin(pool, admin_key, f"a passkey link for {name}")
    return await enrollment_link(pool, name, origin)


async def revoke_passkey(pool: asyncpg.Pool, name: str, credential: str,
                         admin_key: Ed25519PrivateKey | None) -> tuple[str, datetime]:
    """Revoke one of `name`'s passkeys, named by its credential id (base64url, as `recon
    approvers passkeys NAME` shows it) or a unique start of it: an admin's act. The approver
    and their other keys stay; a desk session signed in with it ends at its next page."""
    from recon.domain.passkeys import b64url
    from recon.store import passkeys

    if len(credential) < 6:
        raise Refused("name the passkey by its credential id, or at least its first 6 characters")
    if await store.by_name(pool, name) is None:
        raise Refused(f"no approver {name!r} on record")
    ids = {b64url(k["credential_id"]): k["credential_id"] for k in await passkeys.listed(pool, name)}
    matching = [i for i in ids if i.startswith(credential)]
    if not matching:
        raise Refused(f"{name} holds no passkey {credential!r} (recon approvers passkeys {name})")
    if len(matching) > 1:
        raise Refused(f"{credential!r} starts {len(matching)} of {name}'s passkeys: give more of it")
    await _admin(pool, admin_key, f"revoking a passkey of {name}")
    chosen = matching[0]
    revoked = await passkeys.revoke(pool, ids[chosen])
    if revoked is None:
        raise Refused(f"{name}'s passkey {chosen} was already revoked")
    return chosen, revoked


async def revoke_approver(pool: asyncpg.Pool, name: str,
                          admin_key: Ed25519PrivateKey | None) -> datetime:
    person = await store.by_name(pool, name)
    if person is None:
        raise Refused(f"no approver {name!r} on record")
    if not person.active:
        raise Refused(f"{name} was already revoked at {person.revoked_at:%Y-%m-%d %H:%M:%S}")
    await _admin(pool, admin_key, f"revoking {name}")
    if person.role == "admin" and await store.active_admins(pool) <= 1:
        raise Refused(f"{name} is the last active admin: add another admin first")
    revoked = await store.revoke(pool, name)
    if revoked is None:
        raise Refused(f"{name} was revoked meanwhile")
    return revoked


async def signed_decision(
    pool: asyncpg.Pool, key: Ed25519PrivateKey, *, run: str, handover_no: int, decision: str,
    by: str | None, note: str, park: list[str], now: datetime | None = None,
) -> Decision:
    """The decision as the key's owner signs it. `by`, if given, must name that owner: what is
    on record is who holds the key, never a typed name."""
    person = await owner_of(pool, key)
    if by is not None and by != person.name:
        raise DecisionRefused(f"--by {by!r} is not the owner of this key ({person.name})")
    park = sorted(set(park))
    signed_at = signing_time(now or datetime.now(UTC))
    payload = canonical_decision(run=run, handover_no=handover_no, decision=decision,
                                 by=person.name, note=note, park=park, signed_at=signed_at)
    return Decision(decision=decision, by=person.name, note=note, handover_no=handover_no,
                    park=park, signed_at=signed_at, signature=sign(key, payload))


def write_key_for_tools(path: Path) -> Ed25519PrivateKey:
    """A key pair for a tool's own approver (the demo, chaos, the test stack), written like
    `add --key-file` does; an existing file is reused."""
    if path.exists():
        return load_key(path)
    key = new_private_key()
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        _write_private_key(path, key)
    return load_key(path)


async def ensure_tool_approver(pool: asyncpg.Pool, name: str, email: str, key_path: Path,
                               admin_key: Ed25519PrivateKey | None = None) -> Approver:
    """The demo's and chaos's own approver (an admin with no limit), made once per database:
    their nights are decided by a key like anyone's."""
    key = write_key_for_tools(key_path)
    person = await store.by_key(pool, raw_public(key))
    if person is not None:
        return person
    await _admin(pool, admin_key, f"adding {name}")
    added = await store.add(pool, name, email, "admin", raw_public(key), None)
    if added is None:
        raise Refused(f"approver {name} is already on record with another key")
    return added
