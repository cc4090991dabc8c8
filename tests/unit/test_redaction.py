"""Secrets masked in every form (recon/domain/redaction.py), in log lines and in printed URLs."""

from __future__ import annotations

import io
import json
import logging

import pytest

from recon.domain.redaction import mask_text, mask_value, secret_name
from recon.store.db import redact


@pytest.mark.parametrize(("text", "hidden", "kept"), [
    ("postgresql://recon:s3cr3t@db:5432/recon", "s3cr3t", "db:5432/recon"),
    ("postgresql://recon@db/recon?password=s3cr3t&sslmode=require", "s3cr3t", "sslmode=require"),
    ("postgresql://db/recon?sslpassword=s3cr3t", "s3cr3t", "postgresql://db/recon"),
    ("host=db user=recon password=s3cr3t dbname=recon", "s3cr3t", "dbname=recon"),
    ("https://api.example/v1?api_key=s3cr3t", "s3cr3t", "api.example"),
    ("smtp+starttls://mailer:s3cr3t@smtp.example:587", "s3cr3t", "smtp.example:587"),
    ("cannot reach Postgres at postgresql://u:s3cr3t@h/d: refused", "s3cr3t", "refused"),
    ("token='s3cr3t' next", "s3cr3t", "next"),
])
def test_every_form_of_a_secret_in_text_is_masked(text: str, hidden: str, kept: str) -> None:
    for masked in (mask_text(text), redact(text)):
        assert hidden not in masked and kept in masked and "***" in masked


@pytest.mark.parametrize("key", ["password", "db_password", "token", "access_token", "dsn",
                                 "secret", "client_secret", "api_key", "OPENAI_API_KEY",
                                 "x-api-key", "Authorization", "credentials", "cookie"])
def test_fields_named_like_secrets_are_masked_whole(key: str) -> None:
    assert secret_name(key)
    assert mask_value(key, "postgresql://plain") == "***"


@pytest.mark.parametrize("key", ["prompt_tokens", "completion_tokens", "idempotency_key", "key",
                                 "workflow_id", "reason"])
def test_counts_and_business_keys_are_not_secrets(key: str) -> None:
    assert not secret_name(key)
    assert mask_value(key, 42) == 42


def test_nested_values_are_masked() -> None:
    masked = mask_value("extra", {"dsn": "x", "url": "postgresql://u:pw@h/d", "list": ["token=t"]})
    assert masked == {"dsn": "***", "url": "postgresql://u:***@h/d", "list": ["token=***"]}


def test_a_log_line_carries_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from recon.runtime import logs

    monkeypatch.setenv("RECON_LOG_FORMAT", "json")
    monkeypatch.setattr(logs, "_configured", False)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        logs.configure()
        stream = io.StringIO()
        monkeypatch.setattr("sys.stderr", stream)
        logging.getLogger("recon.test").warning(
            "connecting to postgresql://recon@db/recon?password=hunter2",
            extra={"token": "tok-123", "dsn": "host=db password=hunter2", "prompt_tokens": 7})
    finally:
        root.handlers[:], root.level = handlers, level
    line = json.loads(stream.getvalue().strip().splitlines()[-1])
    assert "hunter2" not in json.dumps(line) and "tok-123" not in json.dumps(line)
    assert line["token"] == line["dsn"] == "***" and line["prompt_tokens"] == 7


def test_every_secret_the_settings_hold_is_masked_by_value_wherever_it_stands(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """Issue 39, item 5: echoed in shapes no pattern knows, each secret is masked by its value."""
    import base64

    from recon.domain import redaction
    from recon.runtime.config import load_settings
    from recon.runtime.logs import _mask_secrets

    pem = tmp_path / "asha.pem"
    pem.write_text("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIKkz0Q7dX2m9pY3yR4wqT8s1Z6nB0cD\n"
                   "-----END PRIVATE KEY-----\n")
    payload_key = base64.b64encode(bytes(range(32))).decode()
    monkeypatch.setenv("RECON_HOME", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-Zx81aQ9")
    monkeypatch.setenv("DATABASE_URL", "postgresql://recon:db%40Pass9@db/recon")
    monkeypatch.setenv("SMTP_URL", "smtps://mailer:smtpSecret77@mail.example:465")
    monkeypatch.setenv("RECON_CODEC_TOKEN", "codec-token-4242")
    monkeypatch.setenv("RECON_PAYLOAD_KEYS", f"k1:{payload_key}")
    monkeypatch.setenv("RECON_APPROVER_KEY", str(pem))
    redaction.forget_all()
    try:
        load_settings()
        for secret in ("sk-proj-Zx81aQ9", "db@Pass9", "db%40Pass9", "smtpSecret77", "codec-token-4242",
                       payload_key, "MC4CAQAwBQYDK2VwBCIEIKkz0Q7dX2m9pY3yR4wqT8s1Z6nB0cD"):
            echoed = f"401 Incorrect API key provided: Bearer {secret}. (user {secret})"
            assert secret not in mask_text(echoed), secret
            assert "Incorrect API key provided: Bearer ***" in mask_text(echoed)
            line = _mask_secrets(None, "", {"event": echoed, "exception": f"Error: {secret}"})
            assert secret not in json.dumps(line), secret
        assert mask_text("abc sk-proj- 12345") == "abc sk-proj- 12345"  # nothing else masked
    finally:
        redaction.forget_all()
