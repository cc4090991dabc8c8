"""A real IMAP server on loopback: Debian's Dovecot, run in the foreground with a config of its own.

`recon dev` serves the example mails from it, and the tests read from it, so the IMAP reader is
only ever tried against a server that speaks the protocol as mail servers do (RFC 3501/9051),
never against a fake of our making. Everything lives in one directory: the config, the
passwd-file (plain passwords, loopback only), the Maildirs, the log (no syslog) and Dovecot's
sockets (`base_dir`), so two servers never meet and stopping one leaves nothing behind.

Dovecot refuses mail access as uid 0, so as root the mailboxes belong to the `dovecot` user the
package creates; as anyone else they belong to that user. Dovecot 2.3 (Debian 12) and 2.4
(Debian 13) differ in most setting names, so both configs are written here; the 2.4 one was written
from its documentation and has not yet run on this project's machines (they have 2.3.19).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import quote

import aioimaplib

from recon.runtime.embedded import StackError, _die_with_parent, free_port, port_open

DOVECOT = "dovecot"


def dovecot_path() -> str | None:
    """The dovecot binary, or None when the package is not installed."""
    return shutil.which(DOVECOT) or next(
        (p for p in ("/usr/sbin/dovecot", "/usr/local/sbin/dovecot") if os.access(p, os.X_OK)), None)


def dovecot_version(binary: str) -> tuple[int, int]:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.match(r"\s*(\d+)\.(\d+)", out)
    if not match:
        raise StackError(f"dovecot --version said {out.strip()!r}, not a version")
    return int(match[1]), int(match[2])


@dataclass(frozen=True)
class Account:
    """One mailbox owner: `url()` is what `recon source add` takes, with the password kept apart."""

    host: str
    port: int
    user: str
    password: str
    tls: bool = False  # True: the imaps:// listener
    plain_port: int = 0  # the imap:// listener (STARTTLS offered when the server has TLS)

    def url(self, folder: str = "INBOX") -> str:
        scheme = "imaps" if self.tls else "imap"
        return f"{scheme}://{quote(self.user, safe='')}@{self.host}:{self.port}/{quote(folder)}"


@dataclass
class DovecotServer:
    """Dovecot on 127.0.0.1, in `root`; `start()` waits until it greets, `stop()` ends it."""

    root: Path
    port: int = 0  # 0: a free port
    tls: bool = False  # also an imaps:// listener and STARTTLS, with a self-signed certificate
    tls_port: int = 0
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def config(self) -> Path:
        return self.root / "dovecot.conf"

    @property
    def passwd(self) -> Path:
        """One passwd-file per user (`passwd/USER`): Dovecot rereads a changed passwd-file at most
        once a second, so an account added to a shared file could be missed for a second."""
        return self.root / "passwd"

    @property
    def log(self) -> Path:
        return self.root / "dovecot.log"

    @property
    def certificate(self) -> Path:
        """The server's self-signed certificate: a client trusts it as its CA (SSL_CERT_FILE)."""
        return self.root / "tls" / "cert.pem"

    def maildir(self, user: str) -> Path:
        return self.root / "mail" / user

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout: float = 60.0) -> DovecotServer:
        binary = dovecot_path()
        if binary is None:
            raise StackError("dovecot is not installed (Debian: apt-get install dovecot-imapd)")
        version = dovecot_version(binary)
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        if self.tls:
            self.tls_port = self.tls_port or free_port()
            _self_signed(self.certificate.parent)
        for sub in ("run", "state", "mail"):
            (self.root / sub).mkdir(exist_ok=True)
        self.stop_leftover()
        uid, gid = _mail_owner()
        os.chown(self.root / "mail", uid, gid)
        self.root.chmod(0o755)  # the mail processes (uid `dovecot` as root) must reach mail/
        _check_reachable(self.root, uid)
        self.passwd.mkdir(exist_ok=True)
        self.config.write_text(_config(self, version, uid))
        self.process = subprocess.Popen(
            [binary, "-F", "-c", str(self.config)], stdin=subprocess.DEVNULL,
            stdout=open(self.root / "dovecot.out", "ab"), stderr=subprocess.STDOUT,  # noqa: SIM115
            start_new_session=True,  # a killed starter (test session, `recon dev`) takes it along:
            preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        deadline = time.monotonic() + timeout
        while not self._greets():
            if self.process.poll() is not None:
                raise StackError(f"dovecot exited with code {self.process.returncode}: {self._last_words()}")
            if time.monotonic() > deadline:
                self.stop()
                raise StackError(f"dovecot did not answer on 127.0.0.1:{self.port} within {timeout:.0f} s")
            time.sleep(0.1)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM, then SIGKILL to its whole process group if it lingers."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout)

    def stop_leftover(self, timeout: float = 30.0) -> None:
        """A Dovecot of this folder that a killed `recon dev` left running holds the port and
        the pid file: stop it first (only if its command line names our config)."""
        try:
            pid = int((self.root / "run" / "master.pid").read_text().split()[0])
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            return
        if str(self.config).encode() not in command:
            return
        with contextlib.suppress(ProcessLookupError, FileNotFoundError):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                if "zombie" in Path(f"/proc/{pid}/status").read_text(errors="replace"):
                    break
                time.sleep(0.1)
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _greets(self) -> bool:
        import socket

        if not port_open(self.port):
            return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as conn:
                return conn.recv(200).startswith(b"* OK")
        except OSError:
            return False

    def _last_words(self) -> str:
        for path in (self.root / "dovecot.out", self.log):
            if path.exists() and (lines := path.read_text(errors="replace").strip().splitlines()):
                return lines[-1]
        return "no output"

    # ------------------------------------------------------------------ accounts
    def add_account(self, user: str | None = None, password: str | None = None) -> Account:
        """A new mailbox owner, in a passwd-file of its own."""
        user = user or f"u{secrets.token_hex(4)}"
        if (self.passwd / user).exists():
            raise ValueError(f"the mailbox owner {user!r} exists already")
        return self.set_account(user, password or secrets.token_urlsafe(12))

    def set_account(self, user: str, password: str) -> Account:
        """The mailbox owner `user` with this password, made or changed (`recon dev` keeps its
        password across starts). The entry is readable by Dovecot's user only."""
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", user) or any(c in password for c in ":\n\r"):
            raise ValueError(f"not a user name and password for the mailbox: {user!r}")
        uid, gid = _mail_owner()
        entry = self.passwd / user
        entry.write_text(f"{user}:{{PLAIN}}{password}:{uid}:{gid}::{self.maildir(user)}::\n")
        entry.chmod(0o600)
        os.chown(entry, uid, gid)
        return Account("127.0.0.1", self.tls_port if self.tls else self.port, user, password, self.tls,
                       self.port)

    def plain(self, account: Account) -> Account:
        """The same mailbox on the imap:// listener (STARTTLS when the server has TLS)."""
        return Account(account.host, self.port, account.user, account.password, False, self.port)


def blocking_parent(folder: Path) -> Path | None:
    """The first folder above `folder` that Dovecot's user cannot enter, if any. Its auth and
    mail processes run as that user: a blocked path makes logins fail later with "Temporary
    authentication failure" and nothing else, so it is checked before starting."""
    uid = _mail_owner()[0]
    if uid == os.geteuid():
        return None
    for parent in folder.resolve().parents:
        if not parent.exists():
            continue  # made later, by us, with modes that let it in
        mode = parent.stat()
        if not mode.st_mode & 0o001 and mode.st_uid != uid:
            return parent
    return None


def _check_reachable(folder: Path, uid: int) -> None:
    if (parent := blocking_parent(folder)) is not None:
        raise StackError(f"dovecot's user (uid {uid}) cannot enter {parent} (mode "
                         f"{parent.stat().st_mode & 0o777:o}); keep its folder under one it can, e.g. /tmp")


async def deliver(account: Account, messages: Iterable[EmailMessage | bytes], *,
                  folder: str = "INBOX", only_if_empty: bool = False) -> int:
    """APPEND each message, unseen, to the folder (created when missing), over the plain loopback
    listener, as a delivering mail server leaves it; returns how many. With `only_if_empty`,
    nothing is added to a folder that holds mail already (`recon dev` started again)."""
    client = aioimaplib.IMAP4(host=account.host, port=account.plain_port or account.port, timeout=60)
    try:
        await client.wait_hello_from_server()
        response = await client.login(account.user, account.password)
        if response.result != "OK":
            raise StackError(f"the loopback mailbox refused {account.user}: {response.lines[-1]!r}")
        await client.create(folder)  # NO [ALREADYEXISTS] when it is there: fine
        if only_if_empty:
            status = await client.status(folder, "(MESSAGES)")
            held = re.search(rb"MESSAGES (\d+)", b" ".join(x for x in status.lines if isinstance(x, bytes)))
            if held and int(held[1]) > 0:
                return 0
        count = 0
        for message in messages:
            raw = message if isinstance(message, bytes) else message.as_bytes()
            response = await client.append(raw, mailbox=folder)
            if response.result != "OK":
                raise StackError(f"the loopback mailbox refused a message: {response.lines[-1]!r}")
            count += 1
        return count
    finally:
        with contextlib.suppress(Exception):
            await client.logout()


def _mail_owner() -> tuple[int, int]:
    if os.geteuid() != 0:
        return os.geteuid(), os.getegid()
    entry = pwd.getpwnam("dovecot")  # the package's user; Dovecot never gives mail to uid 0
    return entry.pw_uid, entry.pw_gid


def _service_users() -> tuple[str, str]:
    """(default_internal_user, default_login_user)."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid()).pw_name
        return me, me
    try:
        pwd.getpwnam("dovenull")
        return "dovecot", "dovenull"
    except KeyError:
        return "dovecot", "dovecot"


def _config(server: DovecotServer, version: tuple[int, int], uid: int) -> str:
    internal, login = _service_users()
    root = server.root
    imaps = f"port = {server.tls_port}" if server.tls else "port = 0"
    if version >= (2, 4):
        tls = (f"ssl = yes\nssl_server_cert_file = {server.certificate}\n"
               f"ssl_server_key_file = {server.certificate.parent / 'key.pem'}\n"
               if server.tls else "ssl = no\n")
        # The oldest 2.4 syntax and storage: every 2.4.x reads it (it must come first).
        return f"""dovecot_config_version = 2.4.0
dovecot_storage_version = 2.4.0
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
log_path = {server.log}
info_log_path = {server.log}
{tls}auth_allow_cleartext = yes
auth_mechanisms = plain login
default_internal_user = {internal}
default_login_user = {login}
first_valid_uid = {min(uid, 1)}
mail_driver = maildir
mail_path = ~/Maildir
namespace inbox {{
  inbox = yes
}}
passdb passwd-file {{
  passwd_file_path = {server.passwd}/%{{user}}
}}
userdb passwd-file {{
  passwd_file_path = {server.passwd}/%{{user}}
}}
service imap-login {{
  inet_listener imap {{
    port = {server.port}
  }}
  inet_listener imaps {{
    {imaps}
  }}
}}
"""
    tls = (f"ssl = yes\nssl_cert = <{server.certificate}\n"
           f"ssl_key = <{server.certificate.parent / 'key.pem'}\n" if server.tls else "ssl = no\n")
    return f"""protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
log_path = {server.log}
info_log_path = {server.log}
{tls}disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = {internal}
default_login_user = {login}
first_valid_uid = {min(uid, 1)}
mail_location = maildir:~/Maildir
namespace inbox {{
  inbox = yes
}}
passdb {{
  driver = passwd-file
  args = {server.passwd}/%u
}}
userdb {{
  driver = passwd-file
  args = {server.passwd}/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {server.port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    {imaps}
  }}
}}
"""


def _self_signed(folder: Path) -> None:
    """A certificate for 127.0.0.1 and localhost that is its own CA (made once per directory)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    if (folder / "cert.pem").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .sign(key, hashes.SHA256()))
    key_path = folder / "key.pem"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
