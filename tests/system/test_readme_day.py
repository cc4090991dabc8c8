"""The README's "A day of use", run as written on the bundled example files (issue 45): every
line works, the second night holds at the gate, a signed decision lets it finish, and
`recon handover` then says what was decided.

`uv run recon dev` is the one line not run as written: it stays in the foreground, so the test
starts it itself, on free ports, in a home of its own. Every other line runs in one bash session
(so `export` carries), with HOME in a temporary folder (`~/.recon-asha.pem`)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from recon.runtime.embedded import free_port
from tests.helpers import ROOT

pytestmark = pytest.mark.slow

DEV = "uv run recon dev"


def day_of_use(title: str = "## A day of use") -> list[str]:
    """The command lines of the README's sh block under `title`, comments removed."""
    text = (ROOT / "README.md").read_text()
    block = re.search(re.escape(title) + r"\n\n(?:(?:(?!```|\n#).)*?\n\n)?```sh\n(.*?)```", text, re.S)
    assert block, f"README.md has no sh block under {title!r}"
    lines = [re.sub(r"\s+#\s.*$", "", line).strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def _env(home: Path) -> dict[str, str]:
    cache = subprocess.run(["uv", "cache", "dir"], capture_output=True, text=True, check=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RECON_", "OPENAI_")) and k not in ("DATABASE_URL", "TEMPORAL_ADDRESS")}
    env.update(HOME=str(home.parent), RECON_HOME=str(home), PYTHONUNBUFFERED="1",
               UV_CACHE_DIR=cache.stdout.strip(), UV_FROZEN="1")
    return env


def _start_dev(home: Path, env: dict[str, str]) -> subprocess.Popen:
    log = home.parent / "dev.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "recon.cli", "dev", "--port", str(free_port()),
         "--ui-port", str(free_port())],
        cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (home / "env").exists() or "worker started" not in log.read_text():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "recon dev did not come up"
        time.sleep(0.2)
    return process


def _run_block(place: Path, lines: list[str],
               rewrite: Callable[[str, str], str] = lambda line, log: line,
               ) -> tuple[str, dict[int, int], subprocess.CompletedProcess]:
    """Start `recon dev` in a home of its own under `place`, run the block's lines after it in
    one bash session (each line as `rewrite` gives it, told the dev log), stop the stack. Returns
    (stdout, each line's exit code by number, the process)."""
    assert lines[0] == DEV, lines[0]
    home = place / "home"
    home.mkdir()
    env = _env(home)
    dev = _start_dev(home, env)
    try:
        log = (place / "dev.log").read_text()
        script = ["set -u"]
        for n, line in enumerate(lines[1:], 1):
            script += [f"echo '@@LINE {n}'", rewrite(line, log), f"echo \"@@EXIT {n} $?\""]
        done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
    finally:
        os.killpg(dev.pid, signal.SIGTERM)
        dev.wait(60)
    exits = {int(n): int(code) for n, code in re.findall(r"@@EXIT (\d+) (\d+)", done.stdout)}
    return done.stdout, exits, done


def test_the_readme_day_of_use_works_line_by_line(place: Path) -> None:
    lines = day_of_use()
    out, exits, done = _run_block(place, lines)
    assert sorted(exits) == list(range(1, len(lines))), (out[-4000:], done.stderr[-4000:])
    held = next(n for n, line in enumerate(lines[1:], 1)
                if line.startswith("uv run recon run --date 2026-10-14"))
    for n, code in exits.items():
        assert code == (3 if n == held else 0), (lines[n], out[-4000:], done.stderr[-4000:])

    def said(n: int) -> str:
        return out.split(f"@@LINE {n}\n", 1)[1].split(f"@@EXIT {n} ", 1)[0]

    numbered = dict(enumerate(lines))
    where = {line.split("  ")[0]: n for n, line in numbered.items()}
    assert "3 suppliers" in said(where["for f in suppliers orders receipts; do uv run recon load "
                                      "$f examples/master-data/$f.csv; done"])
    assert "net ₹600" in said(where["uv run recon status recon-2026-10-13-ldh"])
    assert "recon-2026-10-14-ldh" in said(where["uv run recon handovers"])
    handovers = [n for n, line in numbered.items()
                 if line == "uv run recon handover recon-2026-10-14-ldh"]
    assert len(handovers) == 2, lines
    assert "needs a decision (handover #1)" in said(handovers[0])
    assert "possible duplicate of MS-0042 (S103)" in " ".join(said(handovers[0]).split())
    after = said(handovers[1])
    assert after.startswith("Handover #1 (gate_before_debit_notes") and \
        "was decided: resume by asha" in after, after
    undo = next(n for n, line in numbered.items() if line.startswith("uv run recon undo"))
    assert "1 ledger reversals (₹600 reversed)" in said(undo)


def test_the_readme_unattended_night_from_the_dev_mailbox(place: Path) -> None:
    """The README's mailbox variant: `recon dev` serves the example invoices as mails; two sources
    configured, one `recon run`, and the night fetches, loads and posts the ₹600 by itself. The
    mailbox's port and the password file's folder are the ones this `recon dev` chose."""
    lines = day_of_use("### The same night, unattended, from a mailbox")

    def served_here(line: str, log: str) -> str:
        served = re.search(r"IMAP +imap://ap@127\.0\.0\.1:(\d+)/INBOX", log)
        assert served, log
        return line.replace("127.0.0.1:1143", f"127.0.0.1:{served.group(1)}").replace(
            ".recon/", "$RECON_HOME/")

    out, exits, done = _run_block(place, lines, served_here)
    assert exits == dict.fromkeys(range(1, len(lines)), 0), (out[-4000:], done.stderr[-4000:])
    assert "3 messages (3 unseen)" in out and "nothing changed" in out, out
    assert "net ₹600" in out, out
    assert re.search(r"from source 1 \(imap://ap@127\.0\.0\.1:\d+/INBOX\): 3 imported", out), out
    assert "from source 2 (erp:" in out and "3 file(s) loaded" in out, out
