"""Invoices per extraction activity, fixed in a run's input by the starter: the offline parser
takes a whole group per activity at the default setting; a configured model, or a value set
explicitly, keeps the setting (starter.py)."""

from __future__ import annotations

from dataclasses import replace

from recon.domain.settings_table import default_of
from recon.runtime.config import load_settings
from starter import OFFLINE_EXTRACT_BATCH, extract_batch_for, run_request


def test_the_offline_parser_at_the_default_takes_a_group_per_activity(monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RECON_EXTRACT_BATCH"):
        monkeypatch.delenv(name, raising=False)
    offline = replace(load_settings(), openai_api_key=None, openai_base_url=None,
                      extract_batch_size=default_of("RECON_EXTRACT_BATCH"))
    assert extract_batch_for(offline) == OFFLINE_EXTRACT_BATCH
    assert run_request(offline, "2026-10-13", "ldh").extract_batch_size == OFFLINE_EXTRACT_BATCH
    assert extract_batch_for(replace(offline, extract_batch_size=10)) == 10
    paid = replace(offline, openai_base_url="http://127.0.0.1:9/v1")
    assert extract_batch_for(paid) == default_of("RECON_EXTRACT_BATCH")
