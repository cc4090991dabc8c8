"""Real processes against the session's Postgres and Temporal: every test here runs with the
`stack` fixture's servers in its environment (what a worker or a `recon` command it starts reads)."""

from __future__ import annotations

import pytest

from tests.conftest import Stack, clean_environment


@pytest.fixture(autouse=True)
def _settings_env(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    env = stack.env()
    clean_environment(monkeypatch, **{k: env[k] for k in ("DATABASE_URL", "TEMPORAL_ADDRESS",
                                                          "RECON_HOME", "RECON_PAYLOAD_KEYS",
                                                          "RECON_APPROVER_KEY")
                                      if k in env})
