"""The fast tier's pure tests: no Postgres, no Temporal, no worker process.

`tests/conftest.py` has an autouse `_settings_env` that needs the session `stack` (which starts
embedded Postgres and a Temporal dev server). This fixture of the same name replaces it for every
test under `tests/unit/`, so `uv run pytest tests/unit` starts no server at all.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SERVER_VARIABLES = ("DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE")


@pytest.fixture(autouse=True)
def _settings_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A clean environment: no RECON_/OPENAI_ variables, no servers, a state dir of our own."""
    for key in list(os.environ):
        if key.startswith(("RECON_", "OPENAI_")) or key in SERVER_VARIABLES:
            monkeypatch.delenv(key)
    monkeypatch.setenv("RECON_HOME", str(tmp_path / "home"))
