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
