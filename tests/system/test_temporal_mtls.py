"""Production Temporal behind credentials (issue 39, item 8; docs/operations.md "Temporal with
mTLS").

The frontend takes TLS and requires a client certificate of the deployment's CA (here: the
test's mTLS front before a dev server, tests/fakes/tls_front.py). A worker process, the product's
client and Temporal's own CLI given their certificate (TEMPORAL_TLS_CLIENT_CERT_PATH,
TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH, read by temporalio.envconfig; the
CLI's --tls-* flags) run a night; the same without a certificate, with one of another CA, or in
plain text, reach nothing: the attacks of issue 39 that need only the frontend start here."""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from recon.domain.errors import TemporalUnavailable
from recon.runtime.config import load_settings
from recon.runtime.temporal_client import connect
from recon.tools.seed import seed_night
from tests.fakes.tls_front import MtlsFront, make_pki
from tests.helpers import ROOT, keyring_for_tests, recon_cli, settings_for, start

pytestmark = pytest.mark.slow

TEMPORAL = str(ROOT / ".venv" / "bin" / "temporal")


def _tls_env(pki, cert: Path | None = None, key: Path | None = None) -> dict[str, str]:
    env = {"TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki.ca)}
    if cert and key:
        env |= {"TEMPORAL_TLS_CLIENT_CERT_PATH": str(cert), "TEMPORAL_TLS_CLIENT_KEY_PATH": str(key)}
    else:
        env["TEMPORAL_TLS"] = "true"
    return env


async def _client(front: MtlsFront, monkeypatch, env: dict[str, str]):
    for name in ("TEMPORAL_TLS", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH",
                 "TEMPORAL_TLS_SERVER_CA_CERT_PATH"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return await asyncio.wait_for(connect(replace(
        load_settings(), temporal_address=front.address, payload_keyring=keyring_for_tests())), 30)


async def test_workers_clients_and_the_cli_reach_temporal_only_with_a_client_certificate(
    pool, stack, night, spawn_worker, tmp_path: Path, monkeypatch
) -> None:
    pki = make_pki(tmp_path / "pki")
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=8, mismatches=0)
    with MtlsFront(pki, stack.temporal_address) as front:
        good = _tls_env(pki, pki.client_cert, pki.client_key)
        # refused: no certificate, another CA's certificate, plain text
        for env in (_tls_env(pki), _tls_env(pki, pki.stranger_cert, pki.stranger_key), {}):
            with pytest.raises((TemporalUnavailable, asyncio.TimeoutError)):
                await _client(front, monkeypatch, env)
        cli = recon_cli(stack.env(TEMPORAL_ADDRESS=front.address, **_tls_env(pki)), "status",
                        f"recon-{day}-{warehouse}")
        assert cli.returncode == 1 and "Traceback" not in cli.stderr, cli.stderr
        assert len(cli.stderr.strip().splitlines()) == 1, cli.stderr
        assert f"cannot reach Temporal at {front.address}" in cli.stderr, cli.stderr
        bare = subprocess.run([TEMPORAL, "workflow", "list", "--address", front.address,
                               "--tls-ca-path", str(pki.ca)], capture_output=True, text=True,
                              timeout=60)
        assert bare.returncode != 0

        # with the certificate: a worker process serves a night started by a client
        worker = spawn_worker(queue, TEMPORAL_ADDRESS=front.address, **good)
        client = await _client(front, monkeypatch, good)
        handle = await start(client, settings_for(queue), day, warehouse)
        summary = await asyncio.wait_for(handle.result(), 120)
        assert summary.status == "Completed", worker.output()[-2000:]
        listed = subprocess.run(
            [TEMPORAL, "workflow", "describe", "--address", front.address, "-w", handle.id,
             "--tls-ca-path", str(pki.ca), "--tls-cert-path", str(pki.client_cert),
             "--tls-key-path", str(pki.client_key)], capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0 and handle.id in listed.stdout, listed.stderr
        status = recon_cli(stack.env(TEMPORAL_ADDRESS=front.address, **good), "status", handle.id)
        assert status.returncode == 0 and "Completed" in status.stdout, status.stderr
