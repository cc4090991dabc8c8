"""The fast tier's pure tests: no Postgres, no Temporal, no worker process (no fixture here asks
for one), a clean environment and a state dir of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import clean_environment


@pytest.fixture(autouse=True)
def _settings_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_environment(monkeypatch, RECON_HOME=str(tmp_path / "home"))
