"""`recon ledger init`'s work, in its own process: a Tryton database made from nothing.

A company (₹), the minimal chart of accounts, calendar fiscal years with monthly periods, and the
two accounts step 7 posts on: the supplier payable (code `AP`) and a purchase price variance
account (code `PPV`), in the `EXP` journal the account module ships. trytond's configuration is
global to a process, so this runs as `python -m recon.ledger.tryton_setup DIR [YEARS...]` (SQLite
in DIR), never inside a worker; what it made is printed, one line each.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

DATABASE = "recon"
ADMIN = "admin"
PAYABLE_CODE = "AP"
VARIANCE_CODE = "PPV"
JOURNAL_CODE = "EXP"
# The input tax a claim takes back, one account per part (RECON_LEDGER_TAX_ACCOUNTS).
TAX_ACCOUNTS = (("CGST", "Input CGST"), ("SGST", "Input SGST"), ("IGST", "Input IGST"),
                ("CESS", "Input compensation cess"), ("VAT", "Input VAT"))


def write_config(directory: Path, port: int = 8000, host: str = "127.0.0.1") -> Path:
    """The trytond configuration of a dev/test server: SQLite files in `directory`, loopback
    (a container listens on 0.0.0.0 and is published on the host's loopback)."""
    directory.mkdir(parents=True, exist_ok=True)
    conf = directory / "trytond.conf"
    conf.write_text(
        "[database]\nuri = sqlite://\npath = " + str(directory) + "\n\n"
        "[web]\nlisten = " + host + ":" + str(port) + "\n\n"
        "[session]\nmax_age = 2592000\ntimeout = 2592000\n"
    )
    return conf


def _bin(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else (shutil.which(name) or name)


def server_command(directory: Path) -> list[str]:
    """How to start the server of a database made here (`-d`: loaded before the first call)."""
    return [_bin("trytond"), "-c", str(directory / "trytond.conf"), "-d", DATABASE]


def create_database(directory: Path, password: str, years: list[int],
                    host: str = "127.0.0.1") -> list[str]:
    """Run trytond-admin then fill the company in; returns the lines of what it made."""
    conf = write_config(directory, host=host)
    (directory / f"{DATABASE}.sqlite").touch()
    secret = directory / "admin-password"
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(password)
    env = {**os.environ, "TRYTONPASSFILE": str(secret)}
    subprocess.run([_bin("trytond-admin"), "-c", str(conf), "-d", DATABASE, "--all", "-u",
                    "account", "--activate-dependencies", "--email", "admin@localhost"],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return [*_fill(conf, years), index_descriptions(directory)]


# Not `idx_*` nor `*_index`: trytond drops indexes so named that its modules do not declare when
# it updates them (`trytond-admin -u`); this one must survive that.
DESCRIPTION_INDEX = "recon_account_move_description"


def index_descriptions(directory: Path) -> str:
    """recon finds its moves by key, the move's `description`, which Tryton does not index: each
    look-up (before a post, in the post's own check, in step 7's closing check) would read every
    move. An index on it keeps a look-up's cost flat as the books grow (bench/README.md)."""
    import sqlite3

    db = sqlite3.connect(directory / f"{DATABASE}.sqlite")
    try:
        with db:
            db.execute(f"CREATE INDEX IF NOT EXISTS {DESCRIPTION_INDEX} ON account_move (description)")
    finally:
        db.close()
    return f"index {DESCRIPTION_INDEX}: account_move (description), recon's key"


def _fill(conf: Path, years: list[int]) -> list[str]:
    import datetime
    import logging

    logging.getLogger("trytond").setLevel(logging.WARNING)  # its module loading is not news

    from proteus import Model, config
    from trytond.modules.account.tests.tools import create_chart, create_fiscalyear, get_accounts
    from trytond.modules.company.tests.tools import create_company

    config.set_trytond(database=DATABASE, config_file=str(conf))
    create_company(currency="INR")
    create_chart()
    accounts = get_accounts()
    payable, expense = accounts["payable"], accounts["expense"]
    payable.code = PAYABLE_CODE
    payable.save()
    Account = Model.get("account.account")
    variance = Account(name="Purchase Price Variance", code=VARIANCE_CODE, type=expense.type,
                       parent=expense.parent)
    variance.save()
    tax_type = accounts["tax"].type if "tax" in accounts else expense.type
    tax_parent = accounts["tax"].parent if "tax" in accounts else expense.parent
    for code, name in TAX_ACCOUNTS:
        Account(name=name, code=code, type=tax_type, parent=tax_parent).save()
    made = []
    for year in years:
        fiscalyear = create_fiscalyear(today=(datetime.date(year, 1, 1), datetime.date(year, 12, 31)))
        fiscalyear.save()
        fiscalyear.click("create_period")
        made.append(f"fiscal year {year}: 12 monthly periods, open")
    Journal = Model.get("account.journal")
    journal, = Journal.find([("code", "=", JOURNAL_CODE)])
    return [
        f"database {DATABASE} (SQLite, {conf.parent}), user {ADMIN} (password in "
        f"{conf.parent / 'admin-password'})",
        "company: Dunder Mifflin, currency INR",
        f"accounts: {PAYABLE_CODE} = {payable.name} (supplier payable), "
        f"{VARIANCE_CODE} = {variance.name}, "
        + ", ".join(f"{code} = {name}" for code, name in TAX_ACCOUNTS) + " (input tax)",
        f"journal: {journal.code} ({journal.name})",
        *made,
    ]


def main(argv: list[str]) -> int:
    """`DIR [YEAR...] [--any-host]`: --any-host listens on 0.0.0.0 (in a container)."""
    host = "0.0.0.0" if "--any-host" in argv else "127.0.0.1"
    argv = [a for a in argv if a != "--any-host"]
    directory = Path(argv[0]).resolve()
    import datetime

    years = [int(y) for y in argv[1:]] or [datetime.date.today().year]
    # the admin's password: the one given, else a fresh one; either way only in its file
    password = os.environ.get("RECON_LEDGER_SECRET") or secrets.token_urlsafe(18)
    for line in create_database(directory, password, years, host):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
