"""Real processes against the session's Postgres and Temporal: every test here runs with the
`stack` fixture's servers in its environment (what a worker or a `recon` command it starts reads)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Stack, clean_environment
from tests.tryton import TrytonServer, build_template


@pytest.fixture(autouse=True)
def _settings_env(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    env = stack.env()
    clean_environment(monkeypatch, **{k: env[k] for k in ("DATABASE_URL", "TEMPORAL_ADDRESS",
                                                          "RECON_HOME", "RECON_PAYLOAD_KEYS",
                                                          "RECON_APPROVER_KEY")
                                      if k in env})


@pytest.fixture(scope="session")
def tryton_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Tryton database per session (company, chart, fiscal year 2026): slow to make."""
    return build_template(tmp_path_factory.mktemp("tryton") / "template")


@pytest.fixture
def tryton(tryton_template: Path, tmp_path: Path) -> Iterator[TrytonServer]:
    """A running Tryton server on a copy of the template database, for one test."""
    server = TrytonServer.copy_of(tryton_template, tmp_path / "tryton")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder outside pytest's own temporary root, which pytest keeps at mode 700 (and sets
    so again when another session starts): the embedded Postgres runs as its own user and must
    reach its data folder."""
    folder = Path(tempfile.mkdtemp(prefix="recon-test-home-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
