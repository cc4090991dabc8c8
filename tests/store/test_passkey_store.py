"""Passkeys in Postgres (recon/store/passkeys.py, migration 096) on the session's real Postgres: an
enrollment link registers one passkey, once, before it expires, and only for an active approver;
the sign counter only grows (a cloned authenticator's assertion is refused), while the same
assertion checked again (a retried activity) passes without moving it."""

from __future__ import annotations

import hashlib
import uuid

import asyncpg
import pytest

from recon.domain.errors import Refused
from recon.domain.passkeys import b64url
from recon.ops.approvers import load_key, revoke_passkey
from recon.ops.passkeys import enrollment_link, token_digest
from recon.store import approvers
from recon.store import passkeys as store
from tests.approvers import TEST_APPROVERS, key_path


async def _approver(pool: asyncpg.Pool) -> str:
    name = f"pk-{uuid.uuid4().hex[:10]}"
    assert await approvers.add(pool, name, f"{name}@distributor.example", "approver", None, None)
    return name


async def test_an_enrollment_link_registers_one_passkey_once(pool: asyncpg.Pool) -> None:
    name = await _approver(pool)
    link = await enrollment_link(pool, name, "https://desk.example")
    assert link.startswith("https://desk.example/enroll#")
    digest = token_digest(link.partition("#")[2])
    assert await pool.fetchval("SELECT count(*) FROM passkey_enrollments WHERE token_sha256 = $1",
                               digest) == 1  # the hash is kept, never the token
    assert await store.enrollment_open(pool, digest) == name
    assert await store.enroll(pool, digest, b"cred-" + digest[:8], b"cose", 0, ["internal"]) == name
    assert await store.enroll(pool, digest, b"cred2-" + digest[:8], b"cose", 0, []) is None
    assert await store.enrollment_open(pool, digest) is None


async def test_an_expired_link_or_a_revoked_approver_enrolls_nothing(pool: asyncpg.Pool) -> None:
    name = await _approver(pool)
    old = token_digest((await enrollment_link(pool, name, "http://localhost:8237")).partition("#")[2])
    await pool.execute("UPDATE passkey_enrollments SET created_at = now() - interval '2 days',"
                       " expires_at = now() - interval '1 second' WHERE token_sha256 = $1", old)
    assert await store.enrollment_open(pool, old) is None
    assert await store.enroll(pool, old, uuid.uuid4().bytes, b"cose", 0, []) is None
    fresh = await enrollment_link(pool, name, "http://localhost:8237")
    await approvers.revoke(pool, name)
    assert await store.enroll(pool, token_digest(fresh.partition("#")[2]), uuid.uuid4().bytes,
                              b"cose", 0, []) is None


async def test_the_counter_only_grows_and_a_retried_check_passes_again(pool: asyncpg.Pool) -> None:
    name = await _approver(pool)
    link = await enrollment_link(pool, name, "http://localhost:8237")
    credential = uuid.uuid4().bytes
    await store.enroll(pool, token_digest(link.partition("#")[2]), credential, b"cose", 5, [])

    async def record(signature: bytes, count: int) -> bool:
        async with pool.acquire() as conn, conn.transaction():
            return await store.record_assertion(
                conn, signature_sha256=hashlib.sha256(signature).digest(),
                credential_id=credential, approver=name, canonical=b"{}",
                authenticator_data=b"ad", client_data_json=b"{}", signature=signature,
                sign_count=count)

    assert await record(b"first", 6)
    assert await record(b"first", 6), "the same assertion again is a retry"
    assert not await record(b"cloned", 6), "a counter that did not grow"
    assert not await record(b"older", 4)
    assert await record(b"next", 7)
    assert (await store.by_credential(pool, credential)).sign_count == 7
    assert await pool.fetchval("SELECT count(*) FROM passkey_assertions WHERE approver = $1",
                               name) == 2


async def test_one_passkey_revoked_ends_its_sessions_and_the_others_stay(pool: asyncpg.Pool,
                                                                          database) -> None:
    """`recon approvers revoke-passkey` (recon.ops.approvers.revoke_passkey): an admin's act, one
    passkey named by its credential id or a unique start of it."""
    name = await _approver(pool)
    credentials = [uuid.uuid4().bytes for _ in range(2)]
    for credential in credentials:
        link = await enrollment_link(pool, name, "http://localhost:8237")
        await store.enroll(pool, token_digest(link.partition("#")[2]), credential, b"cose", 0, [])
    first = b64url(credentials[0])
    admin = load_key(key_path(database.state, TEST_APPROVERS[0]))
    with pytest.raises(Refused, match="first 6 characters"):
        await revoke_passkey(pool, name, first[:3], admin)
    with pytest.raises(Refused, match="holds no passkey"):
        await revoke_passkey(pool, name, "~not-an-id", admin)
    with pytest.raises(Refused, match="admin's key"):
        await revoke_passkey(pool, name, first, None)
    assert [await store.still_signed_in(pool, name, c) for c in credentials] == [True, True]
    chosen, _ = await revoke_passkey(pool, name, first[:8], admin)
    assert chosen == first
    assert not await store.still_signed_in(pool, name, credentials[0])
    assert await store.still_signed_in(pool, name, credentials[1])
    assert not await store.still_signed_in(pool, "someone-else", credentials[1])
    listed = {r["credential_id"]: r["revoked_at"] is not None for r in await store.listed(pool, name)}
    assert listed == {credentials[0]: True, credentials[1]: False}
    with pytest.raises(Refused, match="already revoked"):
        await revoke_passkey(pool, name, first, admin)
    await approvers.revoke(pool, name)  # the approver revoked: every session of theirs ends
    assert not await store.still_signed_in(pool, name, credentials[1])
