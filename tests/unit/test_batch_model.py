"""The batch interface's pure parts: groups within the provider's limits, the deadline's next
occurrence, and output and error lines read as answers and failures."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from activities.model_batches import batch_prices
from recon.documents.extraction.batch_model import cut_into_groups, deadline_after, line_of, read_line
from recon.runtime.config import load_settings

IST = timezone(timedelta(hours=5, minutes=30))


def test_groups_stop_at_either_limit() -> None:
    lines = [(f"k{i}", "x" * 99 + "\n") for i in range(10)]  # 100 bytes each
    assert [len(g) for g in cut_into_groups(lines, 4, 10_000)] == [4, 4, 2]
    assert [len(g) for g in cut_into_groups(lines, 50, 350)] == [3, 3, 3, 1]
    assert cut_into_groups([], 4, 100) == []


def test_the_deadline_is_the_next_such_local_time() -> None:
    evening = datetime(2026, 12, 6, 23, 10, tzinfo=IST)
    at = deadline_after(evening, "05:30:00")
    assert at is not None and at > evening and at - evening < timedelta(hours=24)
    assert at.astimezone(evening.astimezone().tzinfo).strftime("%H:%M") == "05:30"
    assert deadline_after(evening, None) is None


def test_a_line_carries_the_recorded_request_and_the_strict_format() -> None:
    recorded = json.dumps({"model": "m", "messages": [{"role": "user", "content": "doc"}]})
    line = json.loads(line_of("S001:INV-1", recorded))
    assert line["custom_id"] == "S001:INV-1" and line["url"] == "/v1/chat/completions"
    assert line["body"]["messages"] == [{"role": "user", "content": "doc"}]
    assert line["body"]["response_format"]["json_schema"]["strict"] is True


def test_output_and_error_lines() -> None:
    requests = {"a": "req-a"}
    ok = read_line(json.dumps({"custom_id": "a", "error": None, "response": {
        "status_code": 200, "body": {"choices": [{"message": {"content": "{}"}}],
                                     "usage": {"prompt_tokens": 7, "completion_tokens": 3}}}}),
        requests)
    assert ok.answer is not None and ok.answer.response == "{}" and ok.answer.request == "req-a"
    assert (ok.answer.prompt_tokens, ok.answer.completion_tokens) == (7, 3)
    refused = read_line(json.dumps({"custom_id": "a", "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": None, "refusal": "no"}}]}}}), requests)
    assert refused.answer is not None and "model refused: no" in refused.answer.response
    bad = read_line(json.dumps({"custom_id": "a", "response": {"status_code": 400, "body": {
        "error": {"message": "too long", "code": "context_length_exceeded"}}}}), requests)
    assert bad.answer is None and bad.rejected and bad.message == "too long"
    expired = read_line(json.dumps({"custom_id": "a", "response": None, "error": {
        "code": "batch_expired", "message": "window"}}), requests)
    assert expired.status is None and expired.code == "batch_expired" and not expired.rejected


@pytest.mark.parametrize(("name", "value", "words"), [
    ("RECON_MODEL_MODE", "batches", "RECON_MODEL_MODE must be one of interactive, batch"),
    ("RECON_MODEL_BATCH_DEADLINE", "25:00", "RECON_MODEL_BATCH_DEADLINE must be HH:MM[:SS] in local"),
    ("RECON_MODEL_BATCH_DEADLINE", "5", "RECON_MODEL_BATCH_DEADLINE must be HH:MM[:SS] in local"),
    ("RECON_MODEL_BATCH_PRICE_IN", "-1", "RECON_MODEL_BATCH_PRICE_IN must be a finite number"),
    ("RECON_MODEL_BATCH_PRICE_FACTOR", "2", "RECON_MODEL_BATCH_PRICE_FACTOR must be at most 1"),
])
def test_bad_batch_settings_are_refused_in_one_line(monkeypatch: pytest.MonkeyPatch, name: str,
                                                    value: str, words: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=re.escape(words)):
        load_settings()


def test_batch_prices_default_to_half_and_can_be_explicit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECON_MODEL_PRICE_IN", "0.15")
    monkeypatch.setenv("RECON_MODEL_PRICE_OUT", "0.60")
    assert batch_prices(load_settings()) == (0.075, 0.30)
    monkeypatch.setenv("RECON_MODEL_BATCH_PRICE_OUT", "0.5")
    monkeypatch.setenv("RECON_MODEL_BATCH_DEADLINE", "5:30")
    settings = load_settings()
    assert batch_prices(settings) == (0.075, 0.5)
    assert settings.model_batch_deadline == "05:30:00"
