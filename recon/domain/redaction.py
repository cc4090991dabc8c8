"""Secrets never reach a log line, an error line or a printed setting, in any of their forms.

Masked: the password of a URL (`postgresql://u:pw@h/db`), secret query parameters and keyword
DSN fields (`?password=`, `sslpassword=`, `token=`, `api_key=`, `secret=`, ... in a URL or in
`host=h password=pw`), and whole values of fields whose names say they hold one (`password`,
`token`, `dsn`, `secret`, `api_key`, `authorization`, `credential`, `cookie`, ...; a *count* of
tokens, `prompt_tokens`, is not one).

Masked by value too: the secrets this process holds (the model key, the database's and the SMTP
server's passwords, the payload keys, the codec token, an approver's key), remembered once when
the settings are read (`remember`, recon/runtime/config.py), are replaced wherever they stand in
any text masked here, whatever a provider or a library echoed around them. No product imports;
the only state is that list of values.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

MASK = "***"
_SECRET_WORDS = frozenset({
    "password", "passwd", "pwd", "secret", "token", "dsn", "authorization", "credential",
    "credentials", "apikey", "cookie", "passphrase",
})
_SECRET_PHRASES = ("api_key", "api-key", "apikey", "private_key", "secret", "password")
_URL_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]+@")
_SECRET_PARAM = re.compile(
    r"(?i)(\b(?:ssl)?(?:password|passwd|pwd|secret|client_secret|token|access_token|"
    r"refresh_token|api_?key|apikey|key_secret|auth)\s*=\s*)('[^']*'|\"[^\"]*\"|[^&\s;,]+)")


# A value shorter than this is not remembered: masking every "abc" in every line would hide
# more than it protects (such a password is refused nowhere, but is no secret either).
MIN_SECRET = 8
_known: list[str] = []  # longest first, so a value inside another is masked with it


def remember(*values: str | None) -> None:
    """Secrets of this process, masked by value from now on (and their URL-quoted spelling)."""
    from urllib.parse import quote, unquote

    new = set(_known)
    for value in values:
        if not value:
            continue
        for form in (value, value.strip(), unquote(value), quote(value, safe="")):
            if len(form) >= MIN_SECRET:
                new.add(form)
    _known[:] = sorted(new, key=len, reverse=True)


def forget_all() -> None:
    """Tests only: a clean slate."""
    _known.clear()


def mask_known(text: str) -> str:
    """Every remembered secret replaced by the mask, wherever it stands."""
    for value in _known:
        if value in text:
            text = text.replace(value, MASK)
    return text


@lru_cache(maxsize=4096)  # field names are few and asked on every log line (twice a line)
def secret_name(key: str) -> bool:
    """Does a field of this name hold a secret? Whole words: `db_password`, `api_key`, `token`,
    `dsn`, `x-api-key`; not `prompt_tokens` or `idempotency_key`."""
    low = key.lower()
    if any(phrase in low for phrase in _SECRET_PHRASES):
        return True
    return any(word in _SECRET_WORDS for word in re.split(r"[^a-z0-9]+", low))


def mask_text(text: str) -> str:
    """A string with every URL password and secret parameter masked (the rest kept, so the host
    and database stay readable), and every secret this process remembers, by value."""
    if _known:
        text = mask_known(text)
    if "://" in text:
        text = _URL_PASSWORD.sub(rf"\1{MASK}@", text)
    if "=" in text:
        text = _SECRET_PARAM.sub(rf"\1{MASK}", text)
    return text


def mask_value(key: str, value: Any) -> Any:
    """One field as it may be shown: masked whole when its name says secret, else its text
    (nested dicts and lists too) with secrets inside masked."""
    if secret_name(key) and value not in (None, ""):
        return MASK
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, dict):
        return {k: mask_value(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(mask_value(key if not secret_name(key) else "x", v) for v in value)
    return value
