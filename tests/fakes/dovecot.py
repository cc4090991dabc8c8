"""A real IMAP server for tests: Debian's Dovecot on loopback (recon/runtime/imap_server.py), one
per session, with a mailbox owner of its own per test so no test sees another's mail.

Fixtures: `imap_server` (session: the running `DovecotServer`, with TLS: imaps:// and STARTTLS
on a self-signed certificate) and `imap_account` (per test: a fresh `Account` on it, whose
certificate the test process trusts through SSL_CERT_FILE). Mail goes in with `deliver` (IMAP
APPEND, unseen, as a delivering mail server leaves it), built with `invoice_mail`; `flags` reads
what the server holds without changing it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import aioimaplib
import pytest
import pytest_asyncio

from recon.runtime.imap_server import Account, DovecotServer, _mail_owner, deliver, dovecot_path


def scratch_root() -> Path:
    """A folder Dovecot's own user can enter (it runs mail as `dovecot` when we are root)."""
    root = Path(tempfile.mkdtemp(prefix="recon-dovecot-"))
    root.chmod(0o755)
    return root


@pytest.fixture(scope="session")
def imap_server() -> Iterator[DovecotServer]:
    if dovecot_path() is None:
        pytest.skip("dovecot is not installed (.ci/run installs dovecot-imapd)")
    root = scratch_root()
    server = DovecotServer(root / "server", tls=True).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest_asyncio.fixture
async def imap_account(imap_server: DovecotServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Account]:
    """A fresh mailbox owner (its `url()` is imaps://); the test process trusts the certificate."""
    monkeypatch.setenv("SSL_CERT_FILE", str(imap_server.certificate))
    yield imap_server.add_account()


def invoice_mail(number: int | str, *, attachment: bytes = b"invoice_no,INV-1\n",
                 filename: str = "invoice.csv", subtype: str = "csv",
                 message_id: str | None = None) -> EmailMessage:
    """A supplier's mail with one attachment."""
    msg = EmailMessage()
    msg["From"] = "billing@supplier.example"
    msg["To"] = "ap@distributor.example"
    msg["Subject"] = f"Invoice {number}"
    msg["Message-ID"] = message_id or make_msgid(f"inv{number}", "supplier.example")
    msg.set_content(f"Please find invoice {number} attached.\n")
    maintype = "text" if subtype in ("csv", "plain") else "application"
    msg.add_attachment(attachment, maintype=maintype, subtype=subtype, filename=filename)
    return msg


def deliver_files(server: DovecotServer, account: Account, messages: Iterable[EmailMessage | bytes],
                  folder: str = "INBOX") -> int:
    """Write each message straight into the owner's Maildir (`new/`), as a local delivery agent
    does: 10,000 messages in seconds where APPEND takes minutes, and bytes APPEND would refuse
    (a NUL in a header) reach the reader as a broken mail server could serve them. Dovecot gives
    them UIDs at its next look at the folder, in file-name order."""
    box = server.maildir(account.user) / "Maildir"
    if folder != "INBOX":
        box = box / f".{folder}"
    uid, gid = _mail_owner()
    for sub in ("", "new", "cur", "tmp"):
        (box / sub).mkdir(exist_ok=True, parents=True)
        os.chown(box / sub, uid, gid)
    stamp = int(time.time())
    count = 0
    for count, message in enumerate(messages, 1):
        raw = message if isinstance(message, bytes) else message.as_bytes()
        path = box / "new" / f"{stamp}.M{count:07d}P{os.getpid()}.recon-tests"
        path.write_bytes(raw)
        os.chown(path, uid, gid)
    return count


async def _login(account: Account) -> aioimaplib.IMAP4:
    """A plain session on the loopback listener (no certificate needed)."""
    client = aioimaplib.IMAP4(host=account.host, port=account.plain_port or account.port, timeout=60)
    await client.wait_hello_from_server()
    response = await client.login(account.user, account.password)
    assert response.result == "OK", response
    return client


async def flags(account: Account, folder: str = "INBOX") -> dict[int, set[str]]:
    """Each message's flags by UID, read in an EXAMINE session (which changes nothing)."""
    client = await _login(account)
    response = await client.examine(folder)
    assert response.result == "OK", response
    client.protocol.state = aioimaplib.SELECTED  # aioimaplib 2.0 does not note EXAMINE's state
    response = await client.uid("fetch", "1:*", "(UID FLAGS)")
    await client.logout()
    found: dict[int, set[str]] = {}
    for line in response.lines:
        match = re.search(rb"UID (\d+) FLAGS \(([^)]*)\)|FLAGS \(([^)]*)\) UID (\d+)", line)
        if match:
            uid = int(match[1] or match[4])
            found[uid] = set((match[2] or match[3] or b"").decode().split())
    return found


__all__ = ["deliver", "deliver_files", "flags", "imap_account", "imap_server", "invoice_mail", "scratch_root"]
