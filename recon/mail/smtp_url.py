"""Where mail goes: `SMTP_URL`, one setting for host, port, TLS and login.

  smtp://127.0.0.1:1025                    plain, for the loopback sink `recon dev` runs
  smtp+starttls://user:pass@host:587       submission port, STARTTLS required, then login
  smtps://user:pass@host:465               TLS from the first byte, then login

User and password are URL-encoded (`%40` for `@`). A plain `smtp://` URL with a login refuses to
send the password in clear text to anything but loopback. Certificates are always verified;
`?cafile=/path/ca.pem` trusts a private CA as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

_DEFAULT_PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@dataclass(frozen=True)
class SmtpTarget:
    host: str
    port: int
    use_tls: bool = False
    start_tls: bool = False
    username: str | None = None
    password: str | None = None
    cafile: str | None = None

    def describe(self) -> str:
        """For logs and error lines: never the password."""
        scheme = "smtps" if self.use_tls else "smtp+starttls" if self.start_tls else "smtp"
        user = f"{self.username}@" if self.username else ""
        return f"{scheme}://{user}{self.host}:{self.port}"


def parse_smtp_url(url: str) -> SmtpTarget:
    """A bad URL is a one-line ValueError (the CLI shows it without a traceback)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(
            f"SMTP_URL must start with smtp://, smtp+starttls:// or smtps://, got {scheme or url!r}"
        )
    if not parts.hostname:
        raise ValueError("SMTP_URL names no host")
    try:
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:
        raise ValueError("SMTP_URL has a bad port") from None
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    if scheme == "smtp" and password and parts.hostname not in _LOOPBACK:
        raise ValueError("SMTP_URL would send a password without TLS: use smtp+starttls:// or smtps://")
    query = parse_qs(parts.query)
    unknown = set(query) - {"cafile"}
    if unknown:
        raise ValueError(f"SMTP_URL has unknown options: {', '.join(sorted(unknown))}")
    return SmtpTarget(
        host=parts.hostname, port=port, use_tls=scheme == "smtps",
        start_tls=scheme == "smtp+starttls", username=username, password=password,
        cafile=query.get("cafile", [None])[0],
    )
