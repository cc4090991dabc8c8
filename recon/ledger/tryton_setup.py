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


def write_config(directory: Path, port: int = 8000, host: str = "127.0.0.1",
                 uri: str | None = None) -> Path:
    """The trytond configuration of a dev/test server: SQLite files in `directory` (or the
    PostgreSQL server of `uri`, `postgresql://user:password@host:port/`), loopback (a container
    listens on 0.0.0.0 and is published on the host's loopback)."""
    directory.mkdir(parents=True, exist_ok=True)
    conf = directory / "trytond.conf"
    database = f"uri = {uri}\n" if uri else "uri = sqlite://\npath = " + str(directory) + "\n"
    conf.write_text(
        "[database]\n" + database + "\n"
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


# recon's own Tryton module (recon/ledger/tryton_module/recon_keys): the move's `recon_key`,
# unique by Tryton's own constraint (docs/ledger.md, "recon's key in Tryton").
KEYS_MODULE = "recon_keys"


def keys_module_found() -> bool:
    """Can trytond load recon_keys here: registered under its `trytond.modules` entry point
    (recon installed beside it) or copied into its modules directory? Not in Tryton's own
    container image (docker-compose.yml's `ledger` profile mounts only this script)."""
    import importlib.util
    from importlib.metadata import entry_points

    if any(ep.name == KEYS_MODULE for ep in entry_points(group="trytond.modules")):
        return True
    return importlib.util.find_spec(f"trytond.modules.{KEYS_MODULE}") is not None


def create_database(directory: Path, password: str, years: list[int],
                    host: str = "127.0.0.1", keys: bool = True, uri: str | None = None,
                    database: str = DATABASE) -> list[str]:
    """Run trytond-admin then fill the company in; returns the lines of what it made. `keys`:
    activate recon_keys too (what `recon ledger init` does; without it, a Tryton as an
    accountant has it before installing the module). `uri`: on that PostgreSQL server, in its
    database `database`, made beforehand (trytond-admin fills a database, never creates one)."""
    conf = write_config(directory, host=host, uri=uri)
    if not uri:
        (directory / f"{database}.sqlite").touch()
    secret = directory / "admin-password"
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(password)
    env = {**os.environ, "TRYTONPASSFILE": str(secret)}
    keys_found = keys and keys_module_found()
    modules = ["account", KEYS_MODULE] if keys_found else ["account"]
    subprocess.run([_bin("trytond-admin"), "-c", str(conf), "-d", database, "--all", "-u",
                    *modules, "--activate-dependencies", "--email", "admin@localhost"],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    made = [f"module {KEYS_MODULE}: account.move.recon_key, unique (a second move of a key is "
            "refused by Tryton)" if keys_found else
            f"module {KEYS_MODULE}: not found by this trytond, not activated (docs/ledger.md: "
            "without it recon keeps to the lowest-id rule)"] if keys else []
    return [*_fill(conf, years, database), *made, index_descriptions(database)]


# Not `idx_*` nor `*_index`: trytond drops indexes so named that its modules do not declare when
# it updates them (`trytond-admin -u`); this one must survive that.
DESCRIPTION_INDEX = "recon_account_move_description"


def index_descriptions(database: str = DATABASE) -> str:
    """recon finds its moves by key, the move's `description`, which Tryton does not index: each
    look-up (before a post, in the post's own check, in step 7's closing check) would read every
    move. An index on it keeps a look-up's cost flat as the books grow (bench/README.md). Made
    through trytond's own connection (SQLite or PostgreSQL, whichever `_fill` configured)."""
    from trytond.transaction import Transaction

    with Transaction().start(database, 0) as transaction:
        transaction.connection.cursor().execute(
            f"CREATE INDEX IF NOT EXISTS {DESCRIPTION_INDEX} ON account_move (description)")
        transaction.commit()
    return f"index {DESCRIPTION_INDEX}: account_move (description), recon's key"


def _fill(conf: Path, years: list[int], database: str = DATABASE) -> list[str]:
    import datetime
    import logging

    logging.getLogger("trytond").setLevel(logging.WARNING)  # its module loading is not news
    # Read before anything imports trytond's backend, which is chosen (SQLite or PostgreSQL) from
    # the configuration at its import.
    from trytond import config as trytond_config

    trytond_config.update_etc(str(conf))

    from proteus import Model, config
    from trytond.modules.account.tests.tools import create_chart, create_fiscalyear, get_accounts
    from trytond.modules.company.tests.tools import create_company

    config.set_trytond(database=database, config_file=str(conf))
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
        f"database {database} ({'PostgreSQL' if 'postgresql' in conf.read_text() else 'SQLite'}, "
        f"{conf.parent}), user {ADMIN} (password in "
        f"{conf.parent / 'admin-password'})",
        "company: Dunder Mifflin, currency INR",
        f"accounts: {PAYABLE_CODE} = {payable.name} (supplier payable), "
        f"{VARIANCE_CODE} = {variance.name}, "
        + ", ".join(f"{code} = {name}" for code, name in TAX_ACCOUNTS) + " (input tax)",
        f"journal: {journal.code} ({journal.name})",
        *made,
    ]


def main(argv: list[str]) -> int:
    """`DIR [YEAR...] [--any-host] [--without-keys] [--uri=URI]`: --any-host listens on 0.0.0.0
    (in a container); --without-keys leaves recon_keys out (tests and the bench of the path
    without); --uri=postgresql://... fills the database `recon` made beforehand on that server."""
    host = "0.0.0.0" if "--any-host" in argv else "127.0.0.1"
    keys = "--without-keys" not in argv
    uri = next((a.split("=", 1)[1] for a in argv if a.startswith("--uri=")), None)
    argv = [a for a in argv if a not in ("--any-host", "--without-keys") and not a.startswith("--uri=")]
    directory = Path(argv[0]).resolve()
    import datetime

    years = [int(y) for y in argv[1:]] or [datetime.date.today().year]
    # the admin's password: the one given, else a fresh one; either way only in its file
    password = os.environ.get("RECON_LEDGER_SECRET") or secrets.token_urlsafe(18)
    for line in create_database(directory, password, years, host, keys, uri):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
