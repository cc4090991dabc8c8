"""`recon approvers add|list|revoke` as a person runs them, on a fresh database: the first approver
is an admin, later changes need an admin's key, keys are files only their owner can read, and
every refusal is one line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from recon.domain.signing import new_private_key
from tests.fakes.smtp import mail_database
from tests.helpers import recon_cli


def _refused(done, words: str) -> None:
    assert done.returncode != 0, done.stdout
    assert words in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


async def test_approvers_are_added_listed_and_revoked_by_admins_only(stack, tmp_path: Path) -> None:
    async with mail_database(stack.database_url) as (url, pool):
        env = stack.env(DATABASE_URL=url)
        env.pop("RECON_APPROVER_KEY")
        boss, ann = tmp_path / "boss.pem", tmp_path / "ann.pem"

        def add(*args: str, key: Path | None = None):
            extra = {"RECON_APPROVER_KEY": str(key)} if key else {}
            return recon_cli(dict(env, **extra), "approvers", "add", *args)

        _refused(add("eve", "--email", "eve@x.example", "--role", "approver",
                     "--key-file", str(tmp_path / "eve.pem")), "must be an admin")
        assert not (tmp_path / "eve.pem").exists(), "a refused add writes no key"
        first = add("boss", "--email", "boss@x.example", "--role", "admin", "--key-file", str(boss))
        assert first.returncode == 0, first.stderr
        assert stat.S_IMODE(boss.stat().st_mode) == 0o600
        assert b"BEGIN PRIVATE KEY" in boss.read_bytes()

        _refused(add("ann", "--email", "ann@x.example", "--role", "approver",
                     "--key-file", str(ann)), "needs an admin's key")
        added = add("ann", "--email", "ann@x.example", "--role", "approver", "--limit", "5,000.50",
                    "--key-file", str(ann), key=boss)
        assert added.returncode == 0, added.stderr
        assert "limit ₹5,000.50" in added.stdout
        assert await pool.fetchval("SELECT limit_paise FROM approvers WHERE name = 'ann'") == 500050

        # A key the person made: only its public half is registered.
        own = new_private_key()
        public = tmp_path / "meera.pub.pem"
        from cryptography.hazmat.primitives import serialization

        public.write_bytes(own.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        made = add("meera", "--email", "m@x.example", "--role", "approver", "--public-key",
                   str(public), key=boss)
        assert made.returncode == 0, made.stderr
        junk = tmp_path / "junk.pem"
        junk.write_text("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n")
        _refused(add("zed", "--email", "z@x.example", "--role", "approver", "--public-key",
                     str(junk), key=boss), "not a PEM public key")
        _refused(add("meera2", "--email", "m@x.example", "--role", "approver", "--public-key",
                     str(public), key=boss), "already registered")

        for args, words in [
            (("bad name", "--email", "b@x.example", "--role", "approver"), "approver name"),
            (("bob", "--email", "not-mail", "--role", "approver"), "--email"),
            (("bob", "--email", "b@x.example", "--role", "root"), "--role"),
            (("bob", "--email", "b@x.example", "--role", "approver", "--limit", "-5"),
             "not an amount"),
            (("bob", "--email", "b@x.example", "--role", "approver", "--limit", "9" * 30),
             "--limit must be"),
            (("ann", "--email", "a@x.example", "--role", "approver"), "--key-file"),
        ]:
            _refused(add(*args, key=boss), words)
        _refused(add("bob", "--email", "b@x.example", "--role", "approver",
                     "--key-file", str(tmp_path / "bob.pem"), key=ann), "active admin's key")
        _refused(add("ann", "--email", "a@x.example", "--role", "approver",
                     "--key-file", str(tmp_path / "ann2.pem"), key=boss), "already on record")

        listed = recon_cli(env, "approvers", "list")
        assert listed.returncode == 0, listed.stderr
        assert all(name in listed.stdout for name in ("boss", "ann", "meera"))

        revoke = dict(env, RECON_APPROVER_KEY=str(boss))
        _refused(recon_cli(revoke, "approvers", "revoke", "boss"), "last active admin")
        done = recon_cli(revoke, "approvers", "revoke", "ann")
        assert done.returncode == 0, done.stderr
        _refused(recon_cli(revoke, "approvers", "revoke", "ann"), "already revoked")
        _refused(recon_cli(revoke, "approvers", "revoke", "nobody"), "no approver")
        row = await pool.fetchrow("SELECT active, revoked_at FROM approvers WHERE name = 'ann'")
        assert row["active"] is False and row["revoked_at"] is not None

        os.chmod(boss, 0o644)
        _refused(recon_cli(revoke, "approvers", "revoke", "meera"), "readable by others")


async def test_four_eyes_means_two_people_one_address_one_active_approver(
    stack, tmp_path: Path
) -> None:
    """Issue 39, item 7: an admin who registers a second approver under their own address (a new
    key) to confirm their own decisions is refused, by the CLI in one line and by Postgres
    itself; an address is free again once its approver is revoked. Duplicates already on record
    when migration 077 arrives: the first added stays, later ones are revoked."""
    import asyncpg

    from recon.store.db import migrate

    async with mail_database(stack.database_url) as (url, pool):
        env = stack.env(DATABASE_URL=url)
        env.pop("RECON_APPROVER_KEY")
        boss, alias, later = tmp_path / "boss.pem", tmp_path / "alias.pem", tmp_path / "later.pem"

        def add(*args: str, key: Path | None = None):
            extra = {"RECON_APPROVER_KEY": str(key)} if key else {}
            return recon_cli(dict(env, **extra), "approvers", "add", *args)

        assert add("boss", "--email", "boss@x.example", "--role", "admin",
                   "--key-file", str(boss)).returncode == 0
        _refused(add("boss-too", "--email", "BOSS@X.example", "--role", "approver",
                     "--key-file", str(alias), key=boss), "boss is an active approver with that")
        assert not alias.exists(), "no key file is left behind"
        with_public = tmp_path / "alias.pub.pem"
        from cryptography.hazmat.primitives import serialization
        with_public.write_bytes(new_private_key().public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        _refused(add("boss-3", "--email", "Boss@x.example", "--role", "approver",
                     "--public-key", str(with_public), key=boss), "active approver with that")
        try:
            await pool.execute(
                "INSERT INTO approvers (name, email, role, public_key) VALUES"
                " ('sneaky', 'boss@x.EXAMPLE', 'approver', $1)", os.urandom(32))
            raise AssertionError("Postgres took a second active approver of one address")
        except asyncpg.UniqueViolationError:
            pass
        # the address is free again once its approver is revoked (a new key for the same person)
        assert add("ops", "--email", "ops@x.example", "--role", "admin", "--key-file",
                   str(later), key=boss).returncode == 0
        assert recon_cli(dict(env, RECON_APPROVER_KEY=str(later)), "approvers", "revoke",
                         "boss").returncode == 0
        assert add("boss-new", "--email", "boss@x.example", "--role", "approver",
                   "--key-file", str(alias), key=later).returncode == 0

        # a database that already holds duplicates when the migration arrives
        await pool.execute("DROP INDEX approvers_one_active_per_email")
        await pool.execute("DELETE FROM schema_migrations WHERE version LIKE '077%'")
        for name, role in (("dup-a", "approver"), ("dup-b", "admin"), ("dup-c", "approver")):
            await pool.execute(
                "INSERT INTO approvers (name, email, role, public_key) VALUES"
                " ($1, 'dup@x.example', $2, $3)", name, role, os.urandom(32))
        await migrate(pool)
        rows = {r["name"]: r["active"] for r in await pool.fetch(
            "SELECT name, active FROM approvers WHERE email = 'dup@x.example'")}
        assert rows == {"dup-a": False, "dup-b": True, "dup-c": False}
