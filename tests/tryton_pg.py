"""Tryton over PostgreSQL for the tests, as a company runs it: Debian's `postgresql` (its server
binaries in /usr/lib/postgresql/N/bin, `apt-get install postgresql`; .ci/run installs it) as
Tryton's database, apart from recon's own embedded Postgres.

One cluster per session: a data folder under /tmp owned by the `postgres` user (initdb and the
server refuse to run as root), on a free loopback port, with a login role `tryton` that owns
Tryton's databases. The session fills one database with `recon ledger init`'s own code
(recon/ledger/tryton_setup.py --uri=...), once with recon_keys and once without, and every test
gets its own copy (`CREATE DATABASE ... TEMPLATE`, a file copy: about a second) and its own
`trytond` process.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from recon.ledger.tryton_setup import write_config
from recon.runtime.embedded import free_port
from tests.debian_postgres import as_postgres, server_bin
from tests.tryton import ADMIN_PASSWORD, TrytonServer

ROLE, ROLE_PASSWORD = "tryton", "tryton-pg-pw"
_copies = itertools.count(1)


@dataclass
class TrytonCluster:
    """A PostgreSQL server holding Tryton's databases."""

    bin: Path
    folder: Path
    port: int

    @classmethod
    def start(cls) -> TrytonCluster:
        bin_dir = server_bin()
        if bin_dir is None:
            raise RuntimeError("Debian's postgresql is not installed: apt-get install postgresql")
        folder = Path(tempfile.mkdtemp(prefix="recon-tryton-pg-"))
        if os.geteuid() == 0:  # as root, the server runs as `postgres`; else as this user
            shutil.chown(folder, "postgres", "postgres")
        folder.chmod(0o700)
        cluster = cls(bin_dir, folder, free_port())
        as_postgres(str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", "postgres",
                     "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                     "--locale=C.UTF-8")
        as_postgres(str(bin_dir / "pg_ctl"), "-D", str(folder / "data"), "-l",
                     str(folder / "server.log"), "-w", "-t", "120", "-o",
                     f"-p {cluster.port} -k {folder} -c listen_addresses=127.0.0.1 "
                     "-c fsync=off -c max_connections=200", "start")
        cluster.sql(f"CREATE ROLE {ROLE} LOGIN CREATEDB PASSWORD '{ROLE_PASSWORD}'")
        return cluster

    def sql(self, statement: str, database: str = "postgres") -> str:
        """One statement as the superuser over the cluster's own socket; its output."""
        return as_postgres(str(self.bin / "psql"), "-h", str(self.folder), "-p", str(self.port),
                            "-d", database, "-v", "ON_ERROR_STOP=1", "-Atc", statement).stdout

    @property
    def uri(self) -> str:
        return f"postgresql://{ROLE}:{ROLE_PASSWORD}@127.0.0.1:{self.port}/"

    @property
    def dsn(self) -> str:
        """For asyncpg, as the superuser (a test's own look at Tryton's tables)."""
        return f"postgresql://postgres@/postgres?host={self.folder}&port={self.port}"

    def build(self, name: str, directory: Path, keys: bool) -> str:
        """A Tryton database `name` made by `recon ledger init`'s code (~30 s)."""
        self.sql(f"CREATE DATABASE {name} OWNER {ROLE} ENCODING 'UTF8' TEMPLATE template0")
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "admin-password").write_text(ADMIN_PASSWORD)
        subprocess.run(
            [sys.executable, "-c",
             "import sys; from pathlib import Path; from recon.ledger.tryton_setup import "
             "create_database; create_database(Path(sys.argv[1]), sys.argv[2], [2026], "
             "keys=sys.argv[3] == '1', uri=sys.argv[4], database=sys.argv[5])",
             str(directory), ADMIN_PASSWORD, "1" if keys else "0", self.uri, name],
            check=True, env={"PATH": "/usr/bin:/bin"}, stdout=subprocess.DEVNULL)
        return name

    def copy_of(self, template: str, directory: Path) -> TrytonServer:
        """A Tryton server (not started) on a fresh copy of `template`."""
        name = f"{template}_{os.getpid()}_{next(_copies)}"
        self.sql(f"CREATE DATABASE {name} OWNER {ROLE} TEMPLATE {template}")
        port = free_port()
        write_config(directory, port, uri=self.uri)
        (directory / "admin-password").write_text(ADMIN_PASSWORD)
        return TrytonServer(directory, port, database=name)

    def stop(self) -> None:
        try:
            as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast",
                         "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
