"""A source's secret, read where its reference says when the worker needs it, and remembered so
it is masked by value in every line that leaves the process. The database holds only the
reference (`file:/path` or `env:NAME`), never the secret."""

from __future__ import annotations

import os
from pathlib import Path

from recon.domain.errors import SourceRefused
from recon.domain.redaction import remember


def read_secret(secret_ref: str | None) -> str | None:
    if not secret_ref:
        return None
    how, _, where = secret_ref.partition(":")
    if how == "file":
        try:
            value = Path(where).read_text().strip()
        except OSError as exc:
            raise SourceRefused(f"the source's password file {where} cannot be read: "
                                f"{exc.strerror}") from None
    elif how == "env":
        value = os.environ.get(where, "").strip()
        if not value:
            raise SourceRefused(f"the source's password variable {where} is not set in the "
                                "worker's environment")
    else:
        raise SourceRefused(f"unknown secret reference {how!r}")
    remember(value)
    return value


def shown(secret_ref: str | None) -> str:
    """How `recon source list` shows where the secret is (never the secret)."""
    if not secret_ref:
        return "-"
    how, _, where = secret_ref.partition(":")
    return f"file {where}" if how == "file" else f"env ${where}"
