"""A real Tryton server for the tests (trytond + trytond-account from PyPI, SQLite): the session
builds one database with `recon ledger init`'s own code (recon/ledger/tryton_setup.py, ~15 s)
and every test gets a copy of its file and its own `trytond` process on a free port.

`moves()` reads Tryton's tables straight from the SQLite file: what the books hold, not what
recon or the JSON-RPC say they hold.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from recon.ledger.tryton_setup import DATABASE, PAYABLE_CODE, write_config
from recon.runtime.embedded import free_port

ADMIN_PASSWORD = "tryton-admin-pw"

# What the books hold, per move: its description (recon's key), state, origin (a cancelling
# move's original) and what it does to the supplier payable, in paise.
MOVES_QUERY = """
SELECT m.id, m.description, m.state, m.origin,
       CAST(round(sum(CAST(l.debit AS REAL) - CAST(l.credit AS REAL)) * 100) AS INTEGER) AS paise
FROM account_move m
JOIN account_move_line l ON l.move = m.id
JOIN account_account a ON a.id = l.account AND a.code = ?
GROUP BY m.id ORDER BY m.id
"""


def build_template(directory: Path) -> Path:
    subprocess.run([sys.executable, "-m", "recon.ledger.tryton_setup", str(directory), "2026"],
                   check=True, env={"RECON_LEDGER_SECRET": ADMIN_PASSWORD, "PATH": "/usr/bin:/bin"},
                   stdout=subprocess.DEVNULL)
    return directory


@dataclass
class TrytonServer:
    directory: Path
    port: int
    process: subprocess.Popen | None = None

    @classmethod
    def copy_of(cls, template: Path, directory: Path) -> TrytonServer:
        shutil.copytree(template, directory)
        port = free_port()
        write_config(directory, port)
        return cls(directory, port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{DATABASE}"

    def env(self) -> dict[str, str]:
        """What a worker needs to post into this Tryton; the password from a file."""
        return {"RECON_LEDGER": "tryton", "RECON_LEDGER_URL": self.url,
                "RECON_LEDGER_SECRET_FILE": str(self.directory / "admin-password")}

    def start(self, timeout: float = 60) -> None:
        log = (self.directory / "trytond.log").open("ab")
        self.process = subprocess.Popen(
            [str(Path(sys.executable).with_name("trytond")), "-c",
             str(self.directory / "trytond.conf"), "-d", DATABASE],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._answers():
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError("trytond did not start:\n"
                             + (self.directory / "trytond.log").read_text()[-2000:])

    def _answers(self) -> bool:
        body = json.dumps({"id": 1, "method": "common.db.login",
                           "params": ["admin", {"password": ADMIN_PASSWORD}, "en"]}).encode()
        request = urllib.request.Request(f"{self.url}/rpc/", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return "result" in json.loads(response.read())
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(15)
        self.process = None

    def moves(self) -> list[sqlite3.Row]:
        with sqlite3.connect(self.directory / f"{DATABASE}.sqlite") as db:
            db.row_factory = sqlite3.Row
            return list(db.execute(MOVES_QUERY, (PAYABLE_CODE,)))

    def lines(self) -> dict[str, dict[str, int]]:
        """description -> {account code: debit - credit in paise}: every line of every move."""
        held: dict[str, dict[str, int]] = {}
        with sqlite3.connect(self.directory / f"{DATABASE}.sqlite") as db:
            for description, code, paise in db.execute(
                    "SELECT m.description, a.code, CAST(round((CAST(l.debit AS REAL)"
                    " - CAST(l.credit AS REAL)) * 100) AS INTEGER) FROM account_move m"
                    " JOIN account_move_line l ON l.move = m.id"
                    " JOIN account_account a ON a.id = l.account"):
                held.setdefault(description, {})[code] = paise
        return held

    def set_period_state(self, state: str) -> None:
        """Close (or reopen) every period, behind Tryton's back: the accountant's year-end."""
        with sqlite3.connect(self.directory / f"{DATABASE}.sqlite") as db:
            db.execute("UPDATE account_period SET state = ?", (state,))
