"""`recon dev --encrypt`, as a person runs it: a key file made once (0600), the codec server on
loopback with the Web UI pointed at it, and every command after it encrypting through
`.recon/env`."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from recon.runtime.config import read_env_file
from recon.runtime.embedded import free_port, temporal_binary
from tests.helpers import ROOT

pytestmark = pytest.mark.slow


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RECON_", "OPENAI_")) and k not in ("DATABASE_URL", "TEMPORAL_ADDRESS")}
    env.update(RECON_HOME=str(home), PYTHONUNBUFFERED="1", RECON_CODEC_PORT=str(free_port()))
    return env


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "recon.cli", *args], cwd=ROOT, env=_env(home),
                          capture_output=True, text=True, timeout=120)


def _post(url: str, body: dict, **headers: str) -> tuple[int, dict, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, dict(response.headers), json.loads(response.read())


def test_recon_dev_encrypt_makes_a_key_and_serves_the_web_ui_decoded(place: Path) -> None:
    home = place / "home"
    home.mkdir()
    port, ui_port = free_port(), free_port()
    log = home / "dev.log"
    dev = subprocess.Popen(
        [sys.executable, "-m", "recon.cli", "dev", "--encrypt", "--port", str(port),
         "--ui-port", str(ui_port)], cwd=ROOT, env=_env(home), stdout=log.open("wb"),
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while not (home / "env").exists() or "worker started" not in log.read_text():
            assert dev.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "recon dev did not come up"
            time.sleep(0.1)
        keys = home / "payload-keys"
        assert keys.stat().st_mode & 0o777 == 0o600
        assert (home / "env").stat().st_mode & 0o777 == 0o600  # it holds the codec token
        env_file = read_env_file(home / "env")
        assert env_file["RECON_PAYLOAD_KEYS_FILE"] == str(keys)
        token, codec_url = env_file["RECON_CODEC_TOKEN"], env_file["RECON_CODEC_URL"]
        assert codec_url.startswith("http://127.0.0.1:")
        assert "Codec" in log.read_text() and token not in log.read_text()

        assert _cli(home, "seed", "--date", "2026-10-14", "--warehouse", "ldh", "--invoices", "30",
                    "--mismatches", "4").returncode == 0
        ran = _cli(home, "run", "--date", "2026-10-14", "--warehouse", "ldh", "--wait")
        assert ran.returncode == 0, ran.stderr
        status = _cli(home, "status", "recon-2026-10-14-ldh")
        assert status.returncode == 0 and "Completed" in status.stdout, status.stderr

        # The stored history is sealed with the dev key ...
        shown = subprocess.run([temporal_binary(), "workflow", "describe", "-w",
                                "recon-2026-10-14-ldh", "--raw", "--output", "json",
                                "--address", f"localhost:{port}"],
                               capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0, shown.stderr
        headline = json.loads(shown.stdout)["workflowExecutionInfo"]["memo"]["fields"]["headline"]
        assert base64.b64decode(headline["metadata"]["encryption-key-id"]) == b"dev-1"
        # ... and the Web UI, told where the codec is, opens it as the browser would.
        with urllib.request.urlopen(f"http://localhost:{ui_port}/api/v1/settings", timeout=10) as r:
            ui_settings = json.loads(r.read())
        endpoint = ui_settings["Codec"]["Endpoint"]
        assert endpoint == f"{codec_url}/{token}"
        status_code, headers, opened = _post(
            f"{endpoint}/decode", {"payloads": [headline]},
            Origin=f"http://localhost:{ui_port}", **{"X-Namespace": "default"})
        assert status_code == 200 and headers["Access-Control-Allow-Origin"] == \
            f"http://localhost:{ui_port}"
        assert json.loads(base64.b64decode(opened["payloads"][0]["data"]))["status"] == "Completed"
    finally:
        dev.send_signal(signal.SIGTERM)
        dev.wait(60)
    # The key outlives the stack: the next `recon dev` on this data reads its histories with it.
    assert (home / "payload-keys").exists()
