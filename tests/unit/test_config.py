"""Settings: environment first, `.recon/env` second, defaults last; a bad value is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from recon.runtime.config import ENV_FILE_NAME, load_settings, read_env_file, state_dir, write_env_file


def _env_file() -> Path:
    return state_dir() / ENV_FILE_NAME


def test_defaults_with_nothing_set() -> None:
    s = load_settings()
    assert (s.temporal_address, s.temporal_namespace, s.database_url) == ("localhost:7233", "default", None)
    assert (s.task_queue, s.warehouse) == ("recon", "ldh")
    assert s.finance_head_email == "finance.head@distributor.example"
    assert (s.post_batch_size, s.extract_batch_size, s.extract_concurrency) == (5000, 50, 8)
    assert (s.openai_api_key, s.openai_base_url, s.model) == (None, None, "gpt-4o-mini")
    assert s.failpoints == ""
    assert (s.gate_max_parked_ratio, s.gate_max_adjustment_share) == (0.10, 0.05)
    # default absolute caps: ₹1 crore a night, ₹25 lakh for one supplier
    assert (s.gate_max_total_paise, s.gate_max_supplier_paise) == (1_00_00_000_00, 25_00_000_00)
    assert (s.metrics_host, s.model_max_document_bytes) == ("127.0.0.1", 100_000)
    assert (s.heartbeat_seconds, s.reminder_utc_time, s.outage_window_seconds) == (1.0, "03:30:00", 1800.0)


def test_the_env_file_is_read_and_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    write_env_file(_env_file(), {
        "TEMPORAL_ADDRESS": "127.0.0.1:17233", "DATABASE_URL": "postgresql://file/db",
        "RECON_POST_BATCH": "7", "RECON_WAREHOUSE": "blr",
    })
    monkeypatch.setenv("RECON_POST_BATCH", "9")
    monkeypatch.setenv("RECON_WAREHOUSE", "")  # empty means unset: the file's value stands
    s = load_settings()
    assert s.temporal_address == "127.0.0.1:17233"
    assert s.database_url == "postgresql://file/db"
    assert s.post_batch_size == 9, "the environment overrides the file"
    assert s.warehouse == "blr"


def test_the_env_file_round_trips_and_ignores_comments_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "env"
    write_env_file(path, {"B": "2", "A": "x=y"})
    assert path.read_text().startswith("#")
    assert read_env_file(path) == {"A": "x=y", "B": "2"}
    path.write_text("# note\n\n  C = 3  \nnot a setting\n")
    assert read_env_file(path) == {"C": "3"}
    assert read_env_file(tmp_path / "missing") == {}


@pytest.mark.parametrize(("raw", "clock"), [("3:5", "03:05:00"), ("23:59:59", "23:59:59"), ("0", "00:00:00")])
def test_reminder_times_are_normalised(monkeypatch: pytest.MonkeyPatch, raw: str, clock: str) -> None:
    monkeypatch.setenv("RECON_REMINDER_UTC", raw)
    assert load_settings().reminder_utc_time == clock


def test_zero_is_allowed_where_it_means_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECON_MODEL_RPM", "0")
    assert load_settings().model_rpm == 0


@pytest.mark.parametrize(("key", "raw", "reason"), [
    ("RECON_POST_BATCH", "abc", "RECON_POST_BATCH must be a whole number, got 'abc'"),
    ("RECON_POST_BATCH", "0", "RECON_POST_BATCH must be at least 1, got 0"),
    ("RECON_EXTRACT_BATCH", "2.5", "RECON_EXTRACT_BATCH must be a whole number"),
    ("RECON_EXTRACT_CONCURRENCY", "-3", "RECON_EXTRACT_CONCURRENCY must be at least 1"),
    ("RECON_GATE_MAX_TOTAL_PAISE", "-1", "RECON_GATE_MAX_TOTAL_PAISE must be at least 1"),
    ("RECON_GATE_MAX_TOTAL_PAISE", "0", "RECON_GATE_MAX_TOTAL_PAISE must be at least 1"),
    ("RECON_GATE_MAX_TOTAL_PAISE", "1e30", "RECON_GATE_MAX_TOTAL_PAISE must be a whole number"),
    ("RECON_GATE_MAX_SUPPLIER_PAISE", str(10**16),
     "RECON_GATE_MAX_SUPPLIER_PAISE must be at most 1000000000000000"),
    ("RECON_GATE_MAX_PARKED_RATIO", "nan", "RECON_GATE_MAX_PARKED_RATIO must be a finite number"),
    ("RECON_GATE_MAX_ADJUSTMENT_SHARE", "inf",
     "RECON_GATE_MAX_ADJUSTMENT_SHARE must be a finite number"),
    ("RECON_GATE_MAX_ADJUSTMENT_SHARE", "1.5", "RECON_GATE_MAX_ADJUSTMENT_SHARE must be at most 1"),
    ("RECON_GATE_MAX_ADJUSTMENT_SHARE", "-0.01", "RECON_GATE_MAX_ADJUSTMENT_SHARE must be above 0"),
    ("RECON_MODEL_MAX_FAILED_SHARE", "2", "RECON_MODEL_MAX_FAILED_SHARE must be at most 1"),
    ("RECON_HEARTBEAT_SECONDS", "inf", "RECON_HEARTBEAT_SECONDS must be a finite number"),
    ("RECON_HEARTBEAT_SECONDS", "7200", "RECON_HEARTBEAT_SECONDS must be at most 3600"),
    ("RECON_POST_BATCH", "2000000", "RECON_POST_BATCH must be at most 1000000"),
    ("RECON_MODEL_MAX_DOCUMENT_BYTES", "0", "RECON_MODEL_MAX_DOCUMENT_BYTES must be at least 1"),
    ("RECON_METRICS_PORT", "70000", "RECON_METRICS_PORT must be at most 65535"),
    ("RECON_HEARTBEAT_SECONDS", "soon", "RECON_HEARTBEAT_SECONDS must be a number, got 'soon'"),
    ("RECON_HEARTBEAT_SECONDS", "0", "RECON_HEARTBEAT_SECONDS must be above 0"),
    ("RECON_GATE_MAX_PARKED_RATIO", "-0.1", "RECON_GATE_MAX_PARKED_RATIO must be above 0"),
    ("RECON_OUTAGE_WINDOW", "x", "RECON_OUTAGE_WINDOW must be a number"),
    ("RECON_REMINDER_UTC", "25:00", "RECON_REMINDER_UTC must be HH:MM[:SS] in UTC, got '25:00'"),
    ("RECON_REMINDER_UTC", "9am", "RECON_REMINDER_UTC must be HH:MM[:SS] in UTC"),
    ("RECON_REMINDER_UTC", "1:2:3:4", "RECON_REMINDER_UTC must be HH:MM[:SS] in UTC"),
])
def test_a_bad_value_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, key: str, raw: str, reason: str
) -> None:
    monkeypatch.setenv(key, raw)
    with pytest.raises(ValueError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith(reason)
    assert "\n" not in message
    error = caught.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__), \
        "no chained traceback behind the one line"


def test_a_bad_value_in_the_env_file_is_refused_too() -> None:
    write_env_file(_env_file(), {"RECON_POST_BATCH": "lots"})
    with pytest.raises(ValueError, match="RECON_POST_BATCH must be a whole number, got 'lots'"):
        load_settings()
