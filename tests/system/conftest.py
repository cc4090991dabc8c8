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
from tests.tryton_pg import TrytonCluster


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


@pytest.fixture(scope="session")
def tryton_template_without_keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same database without recon_keys: the lowest-id rule's Tryton."""
    return build_template(tmp_path_factory.mktemp("tryton") / "plain", keys=False)


@pytest.fixture
def tryton_without_keys(tryton_template_without_keys: Path,
                        tmp_path: Path) -> Iterator[TrytonServer]:
    server = TrytonServer.copy_of(tryton_template_without_keys, tmp_path / "tryton-plain")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tryton_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrytonCluster]:
    """Debian's PostgreSQL as Tryton's database (tests/tryton_pg.py), with two templates:
    `recon` (recon_keys activated, as `recon ledger init` makes it) and `plain` (without)."""
    cluster = TrytonCluster.start()
    try:
        folder = tmp_path_factory.mktemp("tryton-pg")
        cluster.build("recon", folder / "recon", keys=True)
        cluster.build("plain", folder / "plain", keys=False)
        yield cluster
    finally:
        cluster.stop()


def _pg_server(cluster: TrytonCluster, template: str, directory: Path) -> Iterator[TrytonServer]:
    server = cluster.copy_of(template, directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tryton_pg(tryton_cluster: TrytonCluster, tmp_path: Path) -> Iterator[TrytonServer]:
    """A running Tryton over PostgreSQL, recon_keys activated, on a copy for one test."""
    yield from _pg_server(tryton_cluster, "recon", tmp_path / "tryton-pg")


@pytest.fixture(scope="module")
def tryton_pg_shared(tryton_cluster: TrytonCluster,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrytonServer]:
    """One Tryton over PostgreSQL (recon_keys activated) for every test of a module that reads
    back only its own keys: a copy and a trytond start once, not per test."""
    yield from _pg_server(tryton_cluster, "recon", tmp_path_factory.mktemp("tryton-pg-shared"))


@pytest.fixture
def tryton_pg_without_keys(tryton_cluster: TrytonCluster,
                           tmp_path: Path) -> Iterator[TrytonServer]:
    """A running Tryton over PostgreSQL without recon_keys."""
    yield from _pg_server(tryton_cluster, "plain", tmp_path / "tryton-pg-plain")


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder outside pytest's own temporary root, which pytest keeps at mode 700 (and sets
    so again when another session starts): the embedded Postgres runs as its own user and must
    reach its data folder."""
    folder = Path(tempfile.mkdtemp(prefix="recon-test-home-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
