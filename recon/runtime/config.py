"""Settings, read from the environment first and from `.recon/env` second.

`recon dev` writes `.recon/env` so every other command (worker, run, inspect, ...) finds the
embedded servers without the user exporting anything. Production sets the same variables.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from recon.runtime.keyring import Keyring, keyring_from

ENV_FILE_NAME = "env"


def state_dir() -> Path:
    """Where the embedded stack keeps its data: `.recon/` in the working directory by default."""
    return Path(os.environ.get("RECON_HOME", str(DEFAULTS["RECON_HOME"]))).resolve()


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


# Every variable recon reads, with its default (None: unset). The one place defaults live: the
# README's Configuration table and RunRequest's defaults are held to this table by
# tests/unit/test_readme_config.py, and a variable read without an entry here fails at once.
DEFAULTS: dict[str, str | int | float | None] = {
    "TEMPORAL_ADDRESS": "localhost:7233",
    "TEMPORAL_NAMESPACE": "default",
    "DATABASE_URL": None,
    "RECON_TASK_QUEUE": "recon",
    "RECON_WAREHOUSE": "ldh",
    "RECON_HOME": ".recon",
    "OPENAI_API_KEY": None,
    "OPENAI_BASE_URL": None,
    "RECON_MODEL": "gpt-4o-mini",
    "RECON_POST_BATCH": 5000,
    "RECON_EXTRACT_BATCH": 50,
    "RECON_EXTRACT_CONCURRENCY": 8,
    "RECON_HEARTBEAT_SECONDS": 2.0,
    "RECON_OUTAGE_WINDOW": 1800.0,
    "RECON_MODEL_PRICE_IN": 0.0,
    "RECON_MODEL_PRICE_OUT": 0.0,
    "RECON_MODEL_RPM": 0,
    "RECON_MODEL_TPM": 0,
    "RECON_MODEL_TIMEOUT": 60.0,
    "RECON_MODEL_TRIES": 3,
    "RECON_MODEL_RETRY_WAIT": 1.0,
    "RECON_MODEL_MAX_FAILED_SHARE": 0.10,
    "RECON_MODEL_MAX_DOCUMENT_BYTES": 100_000,
    # The gate before debit notes: the worker's policy, never the run's input (docs/design.md §11).
    "RECON_GATE_MAX_PARKED_RATIO": 0.10,
    "RECON_GATE_MAX_ADJUSTMENT_SHARE": 0.05,
    "RECON_GATE_MAX_TOTAL_PAISE": 1_00_00_000_00,  # ₹1,00,00,000 (one crore) a night
    "RECON_GATE_MAX_SUPPLIER_PAISE": 25_00_000_00,  # ₹25,00,000 (25 lakh) for one supplier
    "RECON_FINANCE_HEAD": "finance.head@distributor.example",
    # The cumulative match (docs/design.md §12): the worker's policy too.
    "RECON_RECEIPT_GRACE_DAYS": 3,
    "RECON_PRICE_TOLERANCE_PAISE": 0,  # per unit; 0: none
    "RECON_PRICE_TOLERANCE_PERCENT": 0.0,  # of the PO price; 0: none
    "RECON_REMINDER_UTC": "03:30:00",
    "SMTP_URL": None,
    "RECON_MAIL_FROM": "recon@distributor.example",
    "RECON_MAIL_RETRY_SECONDS": 5.0,
    "RECON_MAIL_POLL_SECONDS": 30.0,
    "RECON_SENDER_LANES": 4,
    "RECON_LOG_FORMAT": None,  # console in a terminal, JSON otherwise (recon/runtime/logs.py)
    "RECON_LOG_LEVEL": "INFO",
    "RECON_METRICS_HOST": "127.0.0.1",
    "RECON_METRICS_PORT": 0,
    "RECON_METRICS_REFRESH": 10.0,
    "RECON_FAILPOINTS": "",
    "RECON_FAILPOINT_RELEASE": "",
    "RECON_PAYLOAD_KEYS": None,
    "RECON_PAYLOAD_KEYS_FILE": None,
    "RECON_CODEC_TOKEN": None,
    "RECON_CODEC_ORIGINS": "http://localhost:8233",
    "RECON_CODEC_HOST": "127.0.0.1",
    "RECON_CODEC_PORT": 8234,
    "RECON_APPROVER_KEY": None,
    "RECON_FOUR_EYES_PAISE": 0,
    "RECON_DECISION_MAX_AGE": 900.0,
}


@dataclass(frozen=True)
class Settings:
    """What `load_settings` read; every default comes from DEFAULTS (no field restates one)."""

    temporal_address: str
    temporal_namespace: str
    database_url: str | None
    task_queue: str
    warehouse: str
    finance_head_email: str
    post_batch_size: int
    extract_batch_size: int
    extract_concurrency: int
    openai_api_key: str | None
    openai_base_url: str | None
    model: str
    failpoints: str
    # The gate before debit notes, weighed on the sum of absolute adjustments (docs/design.md §11)
    gate_max_parked_ratio: float
    gate_max_total_paise: int
    gate_max_adjustment_share: float
    gate_max_supplier_paise: int
    receipt_grace_days: int
    price_tolerance_paise: int
    price_tolerance_percent: float
    heartbeat_seconds: float
    reminder_utc_time: str
    outage_window_seconds: float
    # Mail delivery (recon/mail/): no SMTP_URL means nothing is sent; `recon dev` sets one.
    smtp_url: str | None
    mail_from: str
    mail_retry_seconds: float
    mail_poll_seconds: float
    sender_lanes: int
    # the paid model (see docs/model-calls.md): limits, prices and per-invoice retries
    model_timeout: float
    model_rpm: int
    model_tpm: int
    model_price_in: float
    model_price_out: float
    model_tries: int
    model_retry_wait: float
    model_max_failed_share: float
    model_max_document_bytes: int  # a document above this is parked, never sent to the model
    metrics_host: str  # RECON_METRICS_HOST: the address the endpoint binds (loopback by default)
    metrics_port: int  # RECON_METRICS_PORT: Prometheus endpoint of the worker; 0 = none
    metrics_refresh_seconds: float  # RECON_METRICS_REFRESH: gauges read from Postgres
    # Payload encryption (recon/runtime/codec.py): None means payloads travel as JSON, as before.
    payload_keyring: Keyring | None
    payload_keys_file: str | None  # RECON_PAYLOAD_KEYS_FILE, for child processes
    codec_token: str | None = field(repr=False)  # RECON_CODEC_TOKEN: the codec server asks for it
    codec_origins: str  # RECON_CODEC_ORIGINS: the Web UI origins the codec server answers
    codec_host: str
    codec_port: int
    # Signed decisions (recon/domain/decisions.py): the key `recon approve` signs with; the
    # worker's four-eyes amount (0 = off) and how old a signature may be when it arrives.
    approver_key: str | None
    four_eyes_paise: int
    decision_max_age_seconds: float


def default_of(key: str) -> str | int | float | None:
    """The default of one variable; a name missing from DEFAULTS is a bug, so it raises."""
    return DEFAULTS[key]


def _text(values: dict[str, str], key: str) -> str | None:
    default = default_of(key)
    return values.get(key, None if default is None else str(default))


def _str(values: dict[str, str], key: str) -> str:
    text = _text(values, key)
    assert text is not None, f"{key} has no default"
    return text


MAX_PAISE = 10**15  # ₹10 lakh crore: no limit in paise above this is meant (and sums stay exact)


def _int(values: dict[str, str], key: str, minimum: int = 1, maximum: int | None = None) -> int:
    default = default_of(key)
    assert isinstance(default, int)
    raw = values.get(key)
    if raw is None or raw == "":
        return default
    try:
        number = int(raw)
    except ValueError:
        raise ValueError(f"{key} must be a whole number, got {raw!r}") from None
    if number < minimum:
        raise ValueError(f"{key} must be at least {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{key} must be at most {maximum}, got {number}")
    return number


def _number(values: dict[str, str], key: str, *, zero_allowed: bool,
            maximum: float | None = None) -> float:
    default = default_of(key)
    assert isinstance(default, float)
    raw = values.get(key)
    if raw is None or raw == "":
        return default
    try:
        number = float(raw)
    except ValueError:
        raise ValueError(f"{key} must be a number, got {raw!r}") from None
    if not math.isfinite(number):  # nan passes every comparison, inf every upper bound
        raise ValueError(f"{key} must be a finite number, got {raw!r}")
    if number < 0 or (number == 0 and not zero_allowed):
        raise ValueError(f"{key} must be {'at least' if zero_allowed else 'above'} 0, got {number}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{key} must be at most {maximum:g}, got {number:g}")
    return number


def _share(values: dict[str, str], key: str) -> float:
    """A share of something: above 0, at most 1."""
    return _number(values, key, zero_allowed=False, maximum=1.0)


def _float(values: dict[str, str], key: str) -> float:
    """A number above 0 (a timeout, a share, an interval)."""
    return _number(values, key, zero_allowed=False)


def _amount(values: dict[str, str], key: str) -> float:
    """A number that may be 0 (a price, a limit that is off)."""
    return _number(values, key, zero_allowed=True)


def _clock(values: dict[str, str], key: str) -> str:
    raw = values.get(key) or str(default_of(key))
    parts = raw.split(":")
    try:
        h, m, sec = (int(p) for p in (parts + ["0", "0"])[:3])
    except ValueError:
        raise ValueError(f"{key} must be HH:MM[:SS] in UTC, got {raw!r}") from None
    if len(parts) > 3 or not (0 <= h < 24 and 0 <= m < 60 and 0 <= sec < 60):
        raise ValueError(f"{key} must be HH:MM[:SS] in UTC, got {raw!r}")
    return f"{h:02d}:{m:02d}:{sec:02d}"


def _signature_age(values: dict[str, str]) -> float:
    """Seconds a signed decision stays fresh: above 0, at most a day (nan and inf refused)."""
    seconds = _float(values, "RECON_DECISION_MAX_AGE")
    if not 0 < seconds <= 86_400:
        raise ValueError(f"RECON_DECISION_MAX_AGE must be 1 to 86400 seconds, got {seconds}")
    return seconds


def load_settings() -> Settings:
    """Environment wins over `.recon/env`; defaults fill in the rest."""
    values = read_env_file(state_dir() / ENV_FILE_NAME)
    values.update({k: v for k, v in os.environ.items() if v != ""})
    return Settings(
        temporal_address=_str(values, "TEMPORAL_ADDRESS"),
        temporal_namespace=_str(values, "TEMPORAL_NAMESPACE"),
        database_url=_text(values, "DATABASE_URL"),
        task_queue=_str(values, "RECON_TASK_QUEUE"),
        warehouse=_str(values, "RECON_WAREHOUSE"),
        finance_head_email=_str(values, "RECON_FINANCE_HEAD"),
        post_batch_size=_int(values, "RECON_POST_BATCH", maximum=1_000_000),
        extract_batch_size=_int(values, "RECON_EXTRACT_BATCH", maximum=100_000),
        extract_concurrency=_int(values, "RECON_EXTRACT_CONCURRENCY"),
        openai_api_key=_text(values, "OPENAI_API_KEY"),
        openai_base_url=_text(values, "OPENAI_BASE_URL"),
        model=_str(values, "RECON_MODEL"),
        failpoints=_str(values, "RECON_FAILPOINTS"),
        gate_max_parked_ratio=_share(values, "RECON_GATE_MAX_PARKED_RATIO"),
        gate_max_total_paise=_int(values, "RECON_GATE_MAX_TOTAL_PAISE", maximum=MAX_PAISE),
        gate_max_adjustment_share=_share(values, "RECON_GATE_MAX_ADJUSTMENT_SHARE"),
        gate_max_supplier_paise=_int(values, "RECON_GATE_MAX_SUPPLIER_PAISE",
                                     maximum=MAX_PAISE),
        receipt_grace_days=_int(values, "RECON_RECEIPT_GRACE_DAYS", minimum=0, maximum=365),
        price_tolerance_paise=_int(values, "RECON_PRICE_TOLERANCE_PAISE", minimum=0,
                                   maximum=MAX_PAISE),
        price_tolerance_percent=_number(values, "RECON_PRICE_TOLERANCE_PERCENT",
                                        zero_allowed=True, maximum=100.0),
        heartbeat_seconds=_number(values, "RECON_HEARTBEAT_SECONDS", zero_allowed=False,
                                  maximum=3600.0),
        reminder_utc_time=_clock(values, "RECON_REMINDER_UTC"),
        outage_window_seconds=_float(values, "RECON_OUTAGE_WINDOW"),
        smtp_url=_text(values, "SMTP_URL"),
        mail_from=_str(values, "RECON_MAIL_FROM"),
        mail_retry_seconds=_float(values, "RECON_MAIL_RETRY_SECONDS"),
        mail_poll_seconds=_float(values, "RECON_MAIL_POLL_SECONDS"),
        sender_lanes=_int(values, "RECON_SENDER_LANES"),
        model_timeout=_float(values, "RECON_MODEL_TIMEOUT"),
        model_rpm=_int(values, "RECON_MODEL_RPM", minimum=0),
        model_tpm=_int(values, "RECON_MODEL_TPM", minimum=0),
        model_price_in=_amount(values, "RECON_MODEL_PRICE_IN"),
        model_price_out=_amount(values, "RECON_MODEL_PRICE_OUT"),
        model_tries=_int(values, "RECON_MODEL_TRIES"),
        model_retry_wait=_amount(values, "RECON_MODEL_RETRY_WAIT"),
        model_max_failed_share=_number(values, "RECON_MODEL_MAX_FAILED_SHARE", zero_allowed=True,
                                       maximum=1.0),
        model_max_document_bytes=_int(values, "RECON_MODEL_MAX_DOCUMENT_BYTES",
                                      maximum=50_000_000),
        metrics_host=_str(values, "RECON_METRICS_HOST"),
        metrics_port=_int(values, "RECON_METRICS_PORT", minimum=0, maximum=65535),
        metrics_refresh_seconds=_float(values, "RECON_METRICS_REFRESH"),
        payload_keyring=keyring_from(_text(values, "RECON_PAYLOAD_KEYS"),
                                     _text(values, "RECON_PAYLOAD_KEYS_FILE")),
        payload_keys_file=_text(values, "RECON_PAYLOAD_KEYS_FILE"),
        codec_token=_text(values, "RECON_CODEC_TOKEN"),
        codec_origins=_str(values, "RECON_CODEC_ORIGINS"),
        codec_host=_str(values, "RECON_CODEC_HOST"),
        codec_port=_int(values, "RECON_CODEC_PORT"),
        approver_key=_text(values, "RECON_APPROVER_KEY"),
        four_eyes_paise=_int(values, "RECON_FOUR_EYES_PAISE", minimum=0),
        decision_max_age_seconds=_signature_age(values),
    )
