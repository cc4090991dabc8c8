"""`recon dev` and the commands a person types, as real processes: the embedded stack starts,
the obvious commands work against it through `.recon/env`, and it stops cleanly on SIGTERM,
also after an earlier `recon dev` was killed without any cleanup."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from recon.runtime.config import read_env_file
from recon.runtime.embedded import free_port, port_open
from tests.helpers import ROOT

# Real worker processes or whole nights: the slow tier (`uv run pytest -m "not slow"` skips it).
pytestmark = pytest.mark.slow


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RECON_", "OPENAI_")) and k not in ("DATABASE_URL", "TEMPORAL_ADDRESS")}
    env.update(RECON_HOME=str(home), PYTHONUNBUFFERED="1")
    return env


def _cli(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "recon.cli", *args], cwd=ROOT, env=_env(home),
                          capture_output=True, text=True, timeout=timeout)


def _start_dev(home: Path, port: int, ui_port: int) -> subprocess.Popen:
    log = home / f"dev-{time.monotonic_ns()}.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "recon.cli", "dev", "--port", str(port), "--ui-port", str(ui_port)],
        cwd=ROOT, env=_env(home), stdout=log.open("wb"), stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not (home / "env").exists() or "worker started" not in log.read_text():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "recon dev did not come up"
        time.sleep(0.1)
    return process


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()


def _postgres_pid(home: Path) -> int:
    return int((home / "pgdata" / "postmaster.pid").read_text().splitlines()[0])


@pytest.mark.slow
def test_recon_dev_serves_the_commands_and_stops_cleanly(place: Path) -> None:
    home = place / "home"
    home.mkdir()
    port, ui_port = free_port(), free_port()
    dev = _start_dev(home, port, ui_port)
    try:
        env_file = read_env_file(home / "env")
        assert env_file["TEMPORAL_ADDRESS"] == f"localhost:{port}"
        # the finance desk, its URL printed with the others, is the origin written for commands
        printed = max(home.glob("dev-*.log")).read_text()
        desk = re.search(r"^Desk +(http://localhost:\d+) ", printed, re.MULTILINE)
        assert desk and env_file["RECON_DESK_ORIGIN"] == desk.group(1), printed
        with urllib.request.urlopen(f"{desk.group(1)}/signin", timeout=30) as page:
            assert page.status == 200 and b"Sign in" in page.read()
        temporal_pid = int((home / "temporal.pid").read_text())
        postgres_pid = _postgres_pid(home)

        seeded = _cli(home, "seed", "--date", "2026-10-14", "--warehouse", "ldh",
                      "--invoices", "30", "--mismatches", "4")
        assert seeded.returncode == 0, seeded.stderr
        again = _cli(home, "seed", "--date", "2026-10-14", "--warehouse", "ldh")
        assert again.returncode == 1 and "already has 30 invoices" in again.stderr
        ran = _cli(home, "run", "--date", "2026-10-14", "--warehouse", "ldh", "--wait")
        assert ran.returncode == 0, ran.stderr
        assert "Completed" in ran.stdout
        facts = json.loads(_cli(home, "inspect", "recon-2026-10-14-ldh", "--json").stdout)
        for field in ("status", "ledger_rows", "distinct_keys", "model_calls", "invoice_reads",
                      "stock_movements", "outbox_rows", "parked", "activity_retries",
                      "history_events"):
            assert field in facts, field
        assert facts["status"] == "completed"
        assert facts["ledger_rows"] == facts["distinct_keys"] == 4
        assert facts["model_calls"] == facts["invoice_reads"] == 30
        status = _cli(home, "status", "recon-2026-10-14-ldh")
        assert status.returncode == 0 and "send_summary" in status.stdout
        # The worker `recon dev` runs delivers the outbox to the loopback server's Maildir.
        assert env_file["SMTP_URL"].startswith("smtp://127.0.0.1:")
        deadline = time.monotonic() + 30
        while len(list((home / "mail" / "new").glob("*"))) < facts["outbox_rows"]:
            assert time.monotonic() < deadline, "the night's mail did not arrive"
            time.sleep(0.2)
        listed = _cli(home, "mail", "recon-2026-10-14-ldh")
        assert listed.returncode == 0 and "0 pending, 0 failed" in listed.stdout
        finished = _cli(home, "run", "--date", "2026-10-14", "--warehouse", "ldh")
        assert finished.returncode == 1 and "already finished" in finished.stderr
        for args in (("inspect", "recon-2031-01-01-none"), ("status", "recon-2031-01-01-none"),
                     ("run", "--date", "2026-13-01"), ("handover", "recon-2031-01-01-none")):
            bad = _cli(home, *args)
            assert bad.returncode != 0, args
            assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr

        # A `recon dev` killed without cleanup leaves servers behind; the next one copes.
        dev.send_signal(signal.SIGKILL)
        dev.wait(10)
        dev = _start_dev(home, port, ui_port)
        assert not _alive(temporal_pid), "the leftover Temporal server was stopped"
        temporal_pid = int((home / "temporal.pid").read_text())
        postgres_pid = _postgres_pid(home)
        still = json.loads(_cli(home, "inspect", "recon-2026-10-14-ldh", "--json").stdout)
        assert still["status"] == "completed" and still["ledger_rows"] == 4, "state survived"
    finally:
        dev.send_signal(signal.SIGTERM)
        code = dev.wait(30)
    assert code == 0
    assert not _alive(temporal_pid)
    assert not _alive(postgres_pid)
    assert not port_open(port) and not port_open(ui_port)
    assert not (home / "env").exists()
