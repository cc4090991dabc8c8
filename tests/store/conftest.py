"""The store against a real Postgres, and nothing else: no Temporal server is started for these
tests (they ask for `pool` or `database`, never `stack`)."""

from __future__ import annotations

import pytest

from tests.conftest import Database, clean_environment


@pytest.fixture(autouse=True)
def _settings_env(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_environment(monkeypatch, DATABASE_URL=database.url, RECON_HOME=str(database.state / "home"))
