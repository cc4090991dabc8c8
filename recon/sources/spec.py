"""A source as a person writes it: its URL, its kind, and its settings. Pure code, no I/O.

`imaps://ap@mail.example/INBOX` (TLS, port 993), `imap://ap@mail.example/INBOX` (port 143,
STARTTLS when the server offers it: loopback and trusted networks), `folder:/srv/drop`,
`erp:/srv/erp-exports`. Port 993 is IMAP over TLS whatever the scheme says, so
`imap://ap@mail.example:993/INBOX` is stored as `imaps://`. A password inside the URL is refused:
it would be stored and shown; it is given by file or environment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from recon.domain.cell_formats import AMOUNT_FORMATS, DATE_FORMATS
from recon.domain.errors import Refused

KINDS = ("imap", "folder", "erp")
IMAP_SCHEMES = ("imap", "imaps")
IMAPS_PORT = 993
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


@dataclass(frozen=True)
class SourceSpec:
    kind: str
    url: str  # as stored: the canonical spelling
    settings: dict[str, Any] = field(default_factory=dict)
    secret_ref: str | None = None

    @property
    def folder(self) -> Path:
        """A folder or erp source's directory."""
        return Path(self.url.split(":", 1)[1])


def _folder(kind: str, rest: str) -> str:
    if not rest.startswith("/"):
        raise Refused(f"{kind}: takes an absolute path, like {kind}:/srv/drop; got {kind}:{rest}")
    return f"{kind}:{Path(rest).as_posix()}"


def _imap(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is not None:
        raise Refused("the IMAP URL holds a password: it would be stored and shown; give it with "
                      "--password-file F or --password-env VAR instead")
    if not parts.hostname or not parts.username:
        raise Refused(f"an IMAP source names its user and server, like "
                      f"imaps://ap@mail.example/INBOX; got {url}")
    try:
        port = parts.port or (IMAPS_PORT if parts.scheme == "imaps" else 143)
    except ValueError:
        raise Refused(f"the IMAP URL's port is not a port number: {url}") from None
    scheme = "imaps" if port == IMAPS_PORT else parts.scheme
    folder = unquote(parts.path.lstrip("/")) or "INBOX"
    if parts.query or parts.fragment:
        raise Refused(f"an IMAP source URL takes no query or fragment: {url}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{scheme}://{parts.username}@{host}:{port}/{folder}"


def secret_ref(password_file: Path | None, password_env: str | None) -> str | None:
    """Where the worker reads the secret: `file:/abs/path` or `env:NAME`; never the secret."""
    if password_file is not None and password_env is not None:
        raise Refused("give the password one way: --password-file or --password-env, not both")
    if password_file is not None:
        path = password_file.expanduser().resolve()
        if not path.is_file():
            raise Refused(f"--password-file {password_file}: no such file")
        return f"file:{path}"
    if password_env is not None:
        if not _ENV_NAME.fullmatch(password_env):
            raise Refused(f"--password-env takes a variable's name, like RECON_IMAP_PASSWORD; "
                          f"got {password_env!r}")
        return f"env:{password_env}"
    return None


def parse(url: str, *, date_format: str | None = None, amount_format: str | None = None,
          password_file: Path | None = None, password_env: str | None = None,
          file_to: str | None = None) -> SourceSpec:
    """The source `recon source add WAREHOUSE URL ...` names, or a one-line refusal."""
    url = url.strip()
    scheme, sep, rest = url.partition(":")
    if not sep or scheme not in (*KINDS, *IMAP_SCHEMES):
        raise Refused(f"not a source: {url!r}; a source is imaps://user@host/INBOX, "
                      "imap://user@host/INBOX, folder:/path or erp:/path")
    kind = "imap" if scheme in IMAP_SCHEMES else scheme
    secret = secret_ref(password_file, password_env)
    if kind == "imap":
        if secret is None:
            raise Refused("an IMAP source needs its password: --password-file F or "
                          "--password-env VAR")
        canonical = _imap(url)
    else:
        if secret is not None:
            raise Refused(f"a {kind} source takes no password")
        canonical = _folder(kind, rest)
    settings: dict[str, Any] = {}
    if date_format is not None or amount_format is not None:
        if kind != "erp":
            raise Refused("--date-format and --amount-format are settings of an erp source (the "
                          "invoices' own formats are read from the documents)")
        if date_format is not None:
            if date_format.upper() not in DATE_FORMATS:
                raise Refused(f"--date-format takes {', '.join(DATE_FORMATS)}; got {date_format!r}")
            settings["date_format"] = date_format.upper()
        if amount_format is not None:
            if amount_format.lower() not in AMOUNT_FORMATS:
                raise Refused(f"--amount-format takes {' or '.join(AMOUNT_FORMATS)}; got "
                              f"{amount_format!r}")
            settings["amount_format"] = amount_format.lower()
    if file_to is not None:
        if kind != "imap":
            raise Refused("--file-to is a setting of a mailbox source (the folder its filed "
                          "messages are moved to)")
        if not (file_to and file_to.isascii() and file_to.isprintable()) or any(c in file_to for c in '"\\'):
            raise Refused(f"--file-to takes a folder's name in ASCII without quotes; got {file_to!r}")
        settings["file_to"] = file_to
    return SourceSpec(kind, canonical, settings, secret)
