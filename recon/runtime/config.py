"""Settings, read from the environment first and from `.recon/env` second.

`recon dev` writes `.recon/env` so every other command (worker, run, inspect, ...) finds the
embedded servers without the user exporting anything. Production sets the same variables.
What there is to read, with its type, default and bounds, is the table of
`recon.domain.settings_table`: `Settings` and `load_settings` are made from its rows, so a
setting is added or changed there and nowhere else.
"""

from __future__ import annotations

import base64
import math
import os
from dataclasses import field, make_dataclass
from pathlib import Path
from urllib.parse import urlsplit

from recon.domain.redaction import remember
from recon.domain.settings_table import (
    CLOCK,
    LOCAL_CLOCK,
    MODE,
    MODEL_MODES,
    NUMBER,
    OPTIONAL,
    SETTINGS,
    WHOLE,
    Setting,
    default_of,
)
from recon.domain.settings_table import MAX_PAISE as MAX_PAISE  # bench and tests import it from here
from recon.runtime.keyring import Keyring, keyring_from

ENV_FILE_NAME = "env"


def state_dir() -> Path:
    """Where the embedded stack keeps its data: `.recon/` in the working directory by default."""
    return Path(os.environ.get("RECON_HOME", str(default_of("RECON_HOME")))).resolve()


def read_env_file(path: Path) -> dict[str, str]:
    """Parse KEY=VALUE lines; blank lines and comments are ignored."""
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip()
    return values


def write_env_file(path: Path, values: dict[str, str]) -> None:
    """Readable by its owner only: it can hold the codec token and a database password."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "# written by `recon dev`; the environment overrides every line\n"
    body += "".join(f"{key}={value}\n" for key, value in sorted(values.items()))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(body)


# Every variable recon reads, with its default (None: unset), for the callers that want a dict.
DEFAULTS: dict[str, str | int | float | None] = {row.name: row.default for row in SETTINGS}

_TYPES = {WHOLE: int, NUMBER: float, OPTIONAL: str | None, LOCAL_CLOCK: str | None}  # the rest are text: str

# What `load_settings` read: one field per row that has one, and the keyring the payload keys make.
Settings = make_dataclass("Settings", [
    *((row.field, _TYPES.get(row.kind, str), field(repr=not row.secret))
      for row in SETTINGS if row.field),
    ("payload_keyring", Keyring | None),
], frozen=True)
Settings.__module__ = __name__
Settings.__doc__ = "What `load_settings` read; every field is a row of recon.domain.settings_table."


def _text(values: dict[str, str], row: Setting) -> str | None:
    return values.get(row.name, None if row.default is None else str(row.default))


def _whole(values: dict[str, str], row: Setting) -> int:
    key, raw = row.name, values.get(row.name)
    assert isinstance(row.default, int)
    if raw is None or raw == "":
        return row.default
    try:
        number = int(raw)
    except ValueError:
        raise ValueError(f"{key} must be a whole number, got {raw!r}") from None
    if row.low is not None and number < row.low:
        raise ValueError(f"{key} must be at least {row.low}, got {number}")
    if row.high is not None and number > row.high:
        raise ValueError(f"{key} must be at most {row.high}, got {number}")
    return number


def _number(values: dict[str, str], row: Setting) -> float:
    key, raw = row.name, values.get(row.name)
    assert isinstance(row.default, float) and row.low is not None
    if raw is None or raw == "":
        return row.default
    try:
        number = float(raw)
    except ValueError:
        raise ValueError(f"{key} must be a number, got {raw!r}") from None
    if not math.isfinite(number):  # nan passes every comparison, inf every upper bound
        raise ValueError(f"{key} must be a finite number, got {raw!r}")
    if number < row.low or (number == row.low and row.above):
        raise ValueError(f"{key} must be {'above' if row.above else 'at least'} {row.low:g}, got {number}")
    if row.high is not None and number > row.high:
        if row.high_words:
            raise ValueError(f"{key} must be {row.high_words}, got {number}")
        raise ValueError(f"{key} must be at most {row.high:g}, got {number:g}")
    return number


def _clock(values: dict[str, str], row: Setting) -> str:
    key, raw = row.name, values.get(row.name) or str(row.default)
    parts = raw.split(":")
    try:
        h, m, sec = (int(p) for p in (parts + ["0", "0"])[:3])
    except ValueError:
        raise ValueError(f"{key} must be HH:MM[:SS] in UTC, got {raw!r}") from None
    if len(parts) > 3 or not (0 <= h < 24 and 0 <= m < 60 and 0 <= sec < 60):
        raise ValueError(f"{key} must be HH:MM[:SS] in UTC, got {raw!r}")
    return f"{h:02d}:{m:02d}:{sec:02d}"


def _local_clock(values: dict[str, str], row: Setting) -> str | None:
    raw = values.get(row.name)
    if not raw:
        return None
    parts = raw.split(":")
    try:
        h, m, sec = (int(p) for p in (parts + ["0", "0"])[:3])
    except ValueError:
        raise ValueError(f"{row.name} must be HH:MM[:SS] in local time, got {raw!r}") from None
    if len(parts) < 2 or len(parts) > 3 or not (0 <= h < 24 and 0 <= m < 60 and 0 <= sec < 60):
        raise ValueError(f"{row.name} must be HH:MM[:SS] in local time, got {raw!r}")
    return f"{h:02d}:{m:02d}:{sec:02d}"


def _mode(values: dict[str, str], row: Setting) -> str:
    raw = values.get(row.name) or str(row.default)
    if raw not in MODEL_MODES:
        raise ValueError(f"{row.name} must be one of {', '.join(MODEL_MODES)}, got {raw!r}")
    return raw


def _optional_price(values: dict[str, str], row: Setting) -> str | None:
    raw = values.get(row.name)
    if not raw:
        return None
    try:
        number = float(raw)
    except ValueError:
        raise ValueError(f"{row.name} must be a number, got {raw!r}") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{row.name} must be a finite number of at least 0, got {raw!r}")
    return raw


_READERS = {WHOLE: _whole, NUMBER: _number, CLOCK: _clock, LOCAL_CLOCK: _local_clock, MODE: _mode}
_BY_NAME_READERS = {"RECON_MODEL_BATCH_PRICE_IN": _optional_price,
                    "RECON_MODEL_BATCH_PRICE_OUT": _optional_price}  # the rest are text, never refused


def read_setting(values: dict[str, str], row: Setting) -> str | int | float | None:
    """One row's value from `values` (its default when absent); a bad one is a one-line error."""
    reader = _BY_NAME_READERS.get(row.name) or _READERS.get(row.kind, _text)
    return reader(values, row)


def load_settings() -> Settings:
    """Environment wins over `.recon/env`; defaults fill in the rest. Rows are read in the table's
    order; the keyring is checked as soon as both its variables are read, where it always was."""
    values = read_env_file(state_dir() / ENV_FILE_NAME)
    values.update({k: v for k, v in os.environ.items() if v != ""})
    read: dict[str, object] = {}
    fields: dict[str, object] = {}
    for row in SETTINGS:
        read[row.name] = read_setting(values, row)
        if row.field:
            fields[row.field] = read[row.name]
        if row.name == "RECON_PAYLOAD_KEYS_FILE":
            fields["payload_keyring"] = keyring_from(read["RECON_PAYLOAD_KEYS"], read[row.name])
    settings = Settings(**fields)
    remember_secrets(settings, read)
    return settings


def _url_password(url: object) -> str | None:
    if not isinstance(url, str) or "://" not in url:
        return None
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def _file_secret(path: object) -> str | None:
    """The secret a one-line file holds (the outside ledger's password or token)."""
    if not isinstance(path, str):
        return None
    try:
        return Path(path).expanduser().read_text().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _pem_body(path: object) -> list[str]:
    """The base64 of a key file (an approver's private key): its lines and the whole."""
    if not isinstance(path, str):
        return []
    try:
        text = Path(path).expanduser().read_text()
    except (OSError, UnicodeDecodeError):
        return []
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "-----" not in ln]
    return [*lines, "".join(lines)]


def remember_secrets(settings: Settings, read: dict[str, object] | None = None) -> None:
    """Every secret this process holds, masked by value in whatever text leaves it: logs, error
    lines, handover notes, mail, what goes to Temporal (recon/domain/redaction.py)."""
    read = read or {}
    keyring = settings.payload_keyring
    keys = [base64.b64encode(material).decode() for _, material in keyring.keys] if keyring \
        else []
    keys += [base64.urlsafe_b64encode(material).decode()
             for _, material in (keyring.keys if keyring else ())]
    raw_keys = str(read.get("RECON_PAYLOAD_KEYS") or "")
    keys += [entry.partition(":")[2].strip() for entry in raw_keys.split(",") if ":" in entry]
    remember(
        settings.openai_api_key, settings.codec_token, settings.ledger_secret,
        _file_secret(settings.ledger_secret_file),
        _url_password(settings.database_url), _url_password(settings.smtp_url),
        *keys, *_pem_body(read.get("RECON_APPROVER_KEY")),
    )
