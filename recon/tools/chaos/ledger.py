"""`recon chaos --ledger tryton`: each night also posts into a real Tryton of its own (made like
`recon ledger init`'s, SQLite, in the scratch dir), and the books must agree too: the night under
faults leaves in its Tryton exactly the moves the control night left in its own, each key once,
with the same effect on the supplier payable. Kills, freezes and restarts then land while step 7
is writing to another system."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

from recon.domain.errors import ChaosFailed


def start(directory: Path, year: int) -> tuple[subprocess.Popen, dict[str, str]]:
    """A Tryton made in `directory` (~15 s) and started on a free loopback port; returns the
    server and the worker settings that post into it."""
    from recon.ledger.tryton_setup import DATABASE, server_command, write_config
    from recon.runtime.embedded import free_port

    subprocess.run([sys.executable, "-m", "recon.ledger.tryton_setup", str(directory), str(year)],
                   check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "RECON_LEDGER_SECRET": secrets.token_urlsafe(18)})
    port = free_port()
    write_config(directory, port)
    server = subprocess.Popen(server_command(directory), stdin=subprocess.DEVNULL,
                              stdout=(directory / "trytond.log").open("ab"),
                              stderr=subprocess.STDOUT)
    return server, {"RECON_LEDGER": "tryton",
                    "RECON_LEDGER_URL": f"http://127.0.0.1:{port}/{DATABASE}",
                    "RECON_LEDGER_SECRET_FILE": str(directory / "admin-password"),
                    # a Tryton of its own, with none of the seed's suppliers as parties
                    "RECON_LEDGER_CREATE_PARTIES": "true"}


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)


async def books(env: dict[str, str]) -> dict[str, list[tuple[str, int]]]:
    """key -> [(state, paise on the payable)] of every move the Tryton holds, asked of Tryton."""
    from recon.ledger.tryton import TrytonLedger
    from recon.ledger.tryton_setup import JOURNAL_CODE, PAYABLE_CODE, VARIANCE_CODE

    ledger = TrytonLedger(env["RECON_LEDGER_URL"], "admin",
                          Path(env["RECON_LEDGER_SECRET_FILE"]).read_text().strip(),
                          payable=PAYABLE_CODE, variance=VARIANCE_CODE, journal=JOURNAL_CODE)
    deadline = time.monotonic() + 60
    while True:
        try:
            lines = await ledger._call(
                "model.account.move.line.search_read", [("account.code", "=", PAYABLE_CODE)],
                0, None, None, ["move", "debit", "credit", "move.description", "move.state"])
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    moves: dict[int, list] = {}
    for line in lines:
        move = moves.setdefault(line["move"], [line["move."]["description"],
                                               line["move."]["state"], 0])
        move[2] += int((line["debit"] - line["credit"]) * 100)
    held: dict[str, list[tuple[str, int]]] = {}
    for key, state, paise in (moves[m] for m in sorted(moves)):
        held.setdefault(key, []).append((state, paise))
    return held


def compare(control: dict[str, list[tuple[str, int]]],
            chaos: dict[str, list[tuple[str, int]]]) -> str:
    """One line saying what both books hold; raises ChaosFailed on the first difference."""
    for key in sorted(set(control) | set(chaos)):
        if chaos.get(key) != control.get(key):
            raise ChaosFailed(f"Tryton: key {key} holds {chaos.get(key, [])} under faults, "
                              f"{control.get(key, [])} in the control night")
    doubled = [k for k, moves in chaos.items() if len(moves) != 1 or moves[0][0] != "posted"]
    if doubled:
        raise ChaosFailed(f"Tryton: key {doubled[0]} holds {chaos[doubled[0]]} in both nights")
    return f"Tryton: {len(chaos)} moves in each night's books, each key once, posted, equal"
