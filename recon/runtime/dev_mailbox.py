"""`recon dev`'s accounts-payable mailbox: a real IMAP server on loopback holding the examples'
invoices as supplier mails, so `recon source add ldh imap://…` is tried on the embedded stack as
it would be on the company's mail server.

Dovecot (Debian's `dovecot-imapd`) is started from recon/runtime/imap_server.py; without it
installed, one line says so and the stack goes on (a Maildir source works instead). The owner is
`ap`; the password is made once and kept in RECON_HOME/imap-password (0600), the file `recon
source add --password-file` takes. The example mails are delivered the first time only: a mailbox
that holds mail already is left as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import mimetypes
import secrets
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path

from recon.runtime.embedded import StackError, port_open
from recon.runtime.imap_server import Account, DovecotServer, blocking_parent, deliver, dovecot_path

IMAP_PORT = 1143
OWNER = "ap"
PASSWORD_FILE = "imap-password"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "invoices"


@dataclass
class DevMailbox:
    server: DovecotServer
    account: Account
    password_file: Path
    delivered: int  # example mails delivered by this start (0: the mailbox had mail already)

    @property
    def url(self) -> str:
        return self.account.url()


def example_mails(folder: Path = EXAMPLES) -> list[EmailMessage]:
    """One supplier mail per example invoice, the file attached under its own name. The
    Message-ID is made from the file's content, so the same file is the same mail every time."""
    mails = []
    for path in sorted(p for p in folder.glob("*") if p.is_file()) if folder.is_dir() else []:
        data = path.read_bytes()
        msg = EmailMessage()
        msg["From"] = "billing@supplier.example"
        msg["To"] = "ap@distributor.example"
        msg["Subject"] = f"Invoice {path.stem}"
        msg["Date"] = formatdate(localtime=False)
        msg["Message-ID"] = f"<{hashlib.sha256(data).hexdigest()[:24]}.{path.stem}@examples.recon>"
        msg.set_content(f"Please find invoice {path.stem} attached.\n")
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        maintype, subtype = kind.split("/", 1)
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=path.name)
        mails.append(msg)
    return mails


def _server_folder(state: Path) -> Path:
    """RECON_HOME/imap, unless Dovecot's own user cannot enter it (root's home is 0700): then a
    folder of this RECON_HOME under the system's temporary directory."""
    folder = state / "imap"
    if blocking_parent(folder) is None:
        return folder
    tag = hashlib.sha256(str(state).encode()).hexdigest()[:12]
    fallback = Path(tempfile.gettempdir()) / f"recon-dev-imap-{tag}"
    fallback.mkdir(mode=0o755, exist_ok=True)
    fallback.chmod(0o755)
    return fallback / "imap"


def _password(state: Path) -> tuple[str, Path]:
    path = state / PASSWORD_FILE
    if path.is_file() and (kept := path.read_text().strip()):
        return kept, path
    password = secrets.token_urlsafe(18)
    path.touch(mode=0o600)
    path.write_text(password + "\n")
    return password, path


@contextlib.contextmanager
def loopback_imap(state: Path, say: Callable[[str], None], enabled: bool = True,
                  examples: Path = EXAMPLES) -> Iterator[DevMailbox | None]:
    """The dev mailbox while the stack runs, or None (not asked for, not installed, or it could
    not start: one line says why and the stack goes on)."""
    if not enabled:
        yield None
        return
    if dovecot_path() is None:
        say("IMAP      dovecot is not installed (apt-get install dovecot-imapd): no loopback "
            "mailbox; a Maildir source works instead")
        yield None
        return
    server = DovecotServer(_server_folder(state))
    try:
        server.stop_leftover()  # one a killed `recon dev` left holds our port
        server.port = 0 if port_open(IMAP_PORT) else IMAP_PORT
        server.start()
        password, password_file = _password(state)
        account = server.set_account(OWNER, password)
        delivered = asyncio.run(deliver(account, example_mails(examples), only_if_empty=True))
    except (StackError, OSError, ValueError) as exc:
        server.stop()
        why = str(exc).splitlines()[0] if str(exc) else repr(exc)
        say(f"IMAP      the loopback mailbox did not start: {why}")
        yield None
        return
    try:
        yield DevMailbox(server, account, password_file, delivered)
    finally:
        server.stop()
