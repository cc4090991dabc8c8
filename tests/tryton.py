"""A real Tryton server for the tests (trytond + trytond-account from PyPI, SQLite): the session
builds one database with `recon ledger init`'s own code (recon/ledger/tryton_setup.py, ~15 s;
with recon's module recon_keys, and one without it where a test asks) and every test gets a copy
of its file and its own `trytond` process on a free port. Tryton over PostgreSQL: tests/tryton_pg.py.

`moves()` and `lines()` ask Tryton itself (as its admin, over JSON-RPC, not through recon's
bookkeeping): what the books hold. `set_period_state` writes its SQLite file while it is stopped.
"""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from recon.ledger.tryton import TrytonLedger
from recon.ledger.tryton_setup import DATABASE, PAYABLE_CODE, write_config
from recon.runtime.embedded import free_port

ADMIN_PASSWORD = "tryton-admin-pw"



def build_template(directory: Path, keys: bool = True) -> Path:
    """`keys`: with recon_keys, as `recon ledger init` makes it; without, as an accountant's
    Tryton is before the module is installed."""
    subprocess.run([sys.executable, "-m", "recon.ledger.tryton_setup", str(directory), "2026",
                    *([] if keys else ["--without-keys"])],
                   check=True, env={"RECON_LEDGER_SECRET": ADMIN_PASSWORD, "PATH": "/usr/bin:/bin"},
                   stdout=subprocess.DEVNULL)
    return directory


@dataclass
class TrytonServer:
    directory: Path
    port: int
    database: str = DATABASE
    process: subprocess.Popen | None = None

    @classmethod
    def copy_of(cls, template: Path, directory: Path) -> TrytonServer:
        shutil.copytree(template, directory)
        port = free_port()
        write_config(directory, port)
        return cls(directory, port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.database}"

    def env(self) -> dict[str, str]:
        """What a worker needs to post into this Tryton; the password from a file."""
        return {"RECON_LEDGER": "tryton", "RECON_LEDGER_URL": self.url,
                "RECON_LEDGER_SECRET_FILE": str(self.directory / "admin-password"),
                # the template has none of the seed's suppliers as parties: made on first use
                "RECON_LEDGER_CREATE_PARTIES": "true"}

    def start(self, timeout: float = 60) -> None:
        log = (self.directory / "trytond.log").open("ab")
        self.process = subprocess.Popen(
            [str(Path(sys.executable).with_name("trytond")), "-c",
             str(self.directory / "trytond.conf"), "-d", self.database],
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

    def _rpc(self, method: str, *params):
        """A call to this Tryton as its admin (sync: the tests read between their awaits)."""
        ledger = TrytonLedger(self.url, "admin", ADMIN_PASSWORD, payable=PAYABLE_CODE,
                              variance="PPV", journal="EXP")
        user_id, session = ledger._send("common.db.login",
                                        ["admin", {"password": ADMIN_PASSWORD}, "en"], None)[:2]
        auth = "Session " + base64.b64encode(f"admin:{user_id}:{session}".encode()).decode()
        context = ledger._send("model.res.user.get_preferences", [True, {}], auth)
        return ledger._send(method, [*params, context], auth)

    def moves(self) -> list[dict]:
        """Every move Tryton holds, asked of Tryton: id, description (recon's key), state, origin
        (a cancelling move's original) and its effect on the supplier payable in paise. (The same
        from its database: docs/ledger.md, "Reading back".)"""
        lines = self._rpc("model.account.move.line.search_read", [("account.code", "=", PAYABLE_CODE)],
                          0, None, None, ["move", "debit", "credit", "move.description",
                                          "move.state", "move.origin"])
        moves: dict[int, dict] = {}
        for line in lines:
            move = moves.setdefault(line["move"], {
                "id": line["move"], "description": line["move."]["description"],
                "state": line["move."]["state"], "origin": line["move."]["origin"], "paise": 0})
            move["paise"] += int((line["debit"] - line["credit"]) * 100)
        return [moves[k] for k in sorted(moves)]

    def lines(self) -> dict[str, dict[str, int]]:
        """description -> {account code: debit - credit in paise}: every line of every move."""
        held: dict[str, dict[str, int]] = {}
        for line in self._rpc("model.account.move.line.search_read", [], 0, None, None,
                              ["debit", "credit", "move.description", "account.code"]):
            held.setdefault(line["move."]["description"], {})[line["account."]["code"]] = \
                int((line["debit"] - line["credit"]) * 100)
        return held

    def set_period_state(self, state: str) -> None:
        """Close (or reopen) every period, behind Tryton's back: the accountant's year-end."""
        db = sqlite3.connect(self.directory / f"{DATABASE}.sqlite")
        try:
            with db:
                db.execute("UPDATE account_period SET state = ?", (state,))
        finally:
            db.close()
