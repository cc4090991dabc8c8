"""Mail tests run against a real SMTP server on loopback (aiosmtpd, in a thread of the test) and
a database of their own, so no other test's outbox rows are delivered or counted."""

from __future__ import annotations

import contextlib
import email
import email.policy
import itertools
import mailbox
import os
import time
from collections.abc import AsyncIterator
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
from aiosmtpd.smtp import Envelope, Session

from recon.mail.smtp_sink import MaildirHandler
from recon.store.db import connect_pool, migrate

_dbs = itertools.count(1)


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@contextlib.asynccontextmanager
async def mail_database(server_url: str) -> AsyncIterator[tuple[str, asyncpg.Pool]]:
    """A fresh, migrated database on the session's Postgres; dropped afterwards."""
    name = f"mail_{os.getpid()}_{next(_dbs)}"
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(f"CREATE DATABASE {name}")
    finally:
        await admin.close()
    url = _with_database(server_url, name)
    pool = await connect_pool(url, max_size=10)
    try:
        await migrate(pool)
        yield url, pool
    finally:
        await pool.close()
        admin = await asyncpg.connect(server_url)
        try:
            await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        finally:
            await admin.close()


class ScriptedHandler(MaildirHandler):
    """The sink, plus what real mail servers do to us: refuse some addresses for good (5xx),
    answer 4xx to the first few attempts of a message, and note when each attempt came."""

    def __init__(self, maildir: Path, *, refuse: set[str] = frozenset(),
                 busy_first: int = 0) -> None:
        super().__init__(maildir)
        self.refuse = set(refuse)
        self.busy_left = busy_first
        self.attempts: list[float] = []

    async def handle_RCPT(self, server, session: Session, envelope: Envelope, address: str,
                          rcpt_options: list[str]) -> str:
        if address in self.refuse:
            return f"550 5.1.1 <{address}>: mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session: Session, envelope: Envelope) -> str:
        self.attempts.append(time.monotonic())
        if self.busy_left > 0:
            self.busy_left -= 1
            return "451 4.3.2 try again later"
        return await super().handle_DATA(server, session, envelope)


def inbox(maildir: Path) -> list[EmailMessage]:
    box = mailbox.Maildir(maildir, create=True)
    return [email.message_from_bytes(box.get_bytes(k), policy=email.policy.default)
            for k in box.keys()]


def text_of(msg: EmailMessage) -> str:
    return msg.get_body(preferencelist=("plain",)).get_content()
