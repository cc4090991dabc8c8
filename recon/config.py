"""Settings, read from the environment first and from `.recon/env` second.

`recon dev` writes `.recon/env` so every other command (worker, run, inspect, ...) finds the
embedded servers without the user exporting anything. Production sets the same variables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ENV_FILE_NAME = "env"


def state_dir() -> Path:
    """Where the embedded stack keeps its data: `.recon/` in the working directory by default."""
    return Path(os.environ.get("RECON_HOME", ".recon")).resolve()


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
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "# written by `recon dev`; the environment overrides every line\n"
    body += "".join(f"{key}={value}\n" for key, value in sorted(values.items()))
    path.write_text(body)


@dataclass(frozen=True)
class Settings:
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
    gate_max_parked_ratio: float
    gate_max_total_paise: int
    gate_max_adjustment_share: float
    heartbeat_seconds: float
    reminder_utc_time: str
    outage_window_seconds: float = 1800.0
    # Mail delivery (recon/mail/): no SMTP_URL means nothing is sent; `recon dev` sets one.
    smtp_url: str | None = None
    mail_from: str = "recon@distributor.example"
    mail_retry_seconds: float = 5.0
    mail_poll_seconds: float = 30.0
    sender_lanes: int = 4
    # the paid model (see recon/extraction/model_calls.py): limits, prices and per-invoice retries
    model_timeout: float = 60.0
    model_rpm: int = 0
    model_tpm: int = 0
    model_price_in: float = 0.0
    model_price_out: float = 0.0
    model_tries: int = 3
    model_retry_wait: float = 1.0
    model_max_failed_share: float = 0.10
    metrics_port: int = 0  # RECON_METRICS_PORT: Prometheus endpoint of the worker; 0 = none
    metrics_refresh_seconds: float = 10.0  # RECON_METRICS_REFRESH: gauges read from Postgres


def _int(values: dict[str, str], key: str, default: int, minimum: int = 1) -> int:
    raw = values.get(key)
    if raw is None or raw == "":
        return default
    try:
        number = int(raw)
    except ValueError:
        raise ValueError(f"{key} must be a whole number, got {raw!r}") from None
    if number < minimum:
        raise ValueError(f"{key} must be at least {minimum}, got {number}")
    return number


def _number(values: dict[str, str], key: str, default: float, *, zero_allowed: bool) -> float:
    raw = values.get(key)
    if raw is None or raw == "":
        return default
    try:
        number = float(raw)
    except ValueError:
        raise ValueError(f"{key} must be a number, got {raw!r}") from None
    if number < 0 or (number == 0 and not zero_allowed):
        raise ValueError(f"{key} must be {'at least' if zero_allowed else 'above'} 0, got {number}")
    return number


def _float(values: dict[str, str], key: str, default: float) -> float:
    """A number above 0 (a timeout, a share, an interval)."""
    return _number(values, key, default, zero_allowed=False)


def _amount(values: dict[str, str], key: str, default: float) -> float:
    """A number that may be 0 (a price, a limit that is off)."""
    return _number(values, key, default, zero_allowed=True)


def _clock(values: dict[str, str], key: str, default: str) -> str:
    raw = values.get(key) or default
    parts = raw.split(":")
    try:
        h, m, sec = (int(p) for p in (parts + ["0", "0"])[:3])
    except ValueError:
        raise ValueError(f"{key} must be HH:MM[:SS] in UTC, got {raw!r}") from None
    if len(parts) > 3 or not (0 <= h < 24 and 0 <= m < 60 and 0 <= sec < 60):
        raise ValueError(f"{key} must be HH:MM[:SS] in UTC, got {raw!r}")
    return f"{h:02d}:{m:02d}:{sec:02d}"


def load_settings() -> Settings:
    """Environment wins over `.recon/env`; defaults fill in the rest."""
    values = read_env_file(state_dir() / ENV_FILE_NAME)
    values.update({k: v for k, v in os.environ.items() if v != ""})
    return Settings(
        temporal_address=values.get("TEMPORAL_ADDRESS", "localhost:7233"),
        temporal_namespace=values.get("TEMPORAL_NAMESPACE", "default"),
        database_url=values.get("DATABASE_URL"),
        task_queue=values.get("RECON_TASK_QUEUE", "recon"),
        warehouse=values.get("RECON_WAREHOUSE", "ldh"),
        finance_head_email=values.get("RECON_FINANCE_HEAD", "finance.head@distributor.example"),
        post_batch_size=_int(values, "RECON_POST_BATCH", 5000),
        extract_batch_size=_int(values, "RECON_EXTRACT_BATCH", 50),
        extract_concurrency=_int(values, "RECON_EXTRACT_CONCURRENCY", 8),
        openai_api_key=values.get("OPENAI_API_KEY"),
        openai_base_url=values.get("OPENAI_BASE_URL"),
        model=values.get("RECON_MODEL", "gpt-4o-mini"),
        failpoints=values.get("RECON_FAILPOINTS", ""),
        gate_max_parked_ratio=_float(values, "RECON_GATE_MAX_PARKED_RATIO", 0.10),
        gate_max_total_paise=_int(values, "RECON_GATE_MAX_TOTAL_PAISE", 0, minimum=0),
        gate_max_adjustment_share=_float(values, "RECON_GATE_MAX_ADJUSTMENT_SHARE", 0.05),
        heartbeat_seconds=_float(values, "RECON_HEARTBEAT_SECONDS", 2.0),
        reminder_utc_time=_clock(values, "RECON_REMINDER_UTC", "03:30:00"),
        outage_window_seconds=_float(values, "RECON_OUTAGE_WINDOW", 1800.0),
        smtp_url=values.get("SMTP_URL"),
        mail_from=values.get("RECON_MAIL_FROM", "recon@distributor.example"),
        mail_retry_seconds=_float(values, "RECON_MAIL_RETRY_SECONDS", 5.0),
        mail_poll_seconds=_float(values, "RECON_MAIL_POLL_SECONDS", 30.0),
        sender_lanes=_int(values, "RECON_SENDER_LANES", 4),
        model_timeout=_float(values, "RECON_MODEL_TIMEOUT", 60.0),
        model_rpm=_int(values, "RECON_MODEL_RPM", 0, minimum=0),
        model_tpm=_int(values, "RECON_MODEL_TPM", 0, minimum=0),
        model_price_in=_amount(values, "RECON_MODEL_PRICE_IN", 0.0),
        model_price_out=_amount(values, "RECON_MODEL_PRICE_OUT", 0.0),
        model_tries=_int(values, "RECON_MODEL_TRIES", 3),
        model_retry_wait=_amount(values, "RECON_MODEL_RETRY_WAIT", 1.0),
        model_max_failed_share=_amount(values, "RECON_MODEL_MAX_FAILED_SHARE", 0.10),
        metrics_port=_int(values, "RECON_METRICS_PORT", 0, minimum=0),
        metrics_refresh_seconds=_float(values, "RECON_METRICS_REFRESH", 10.0),
    )
