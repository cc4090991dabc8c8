"""`recon dev`: the whole embedded stack in one command, stopped cleanly on Ctrl-C or SIGTERM.

Temporal dev server (Web UI), embedded Postgres (data under `.recon/`), the schema, a loopback
mail server keeping every message in `.recon/mail/` (Maildir), a worker (which also delivers the
outbox), and `.recon/env` so every other command finds them. A previous `recon dev` that was
killed leaves servers behind; starting again stops those first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from recon.config import ENV_FILE_NAME, Settings, load_settings, write_env_file
from recon.db import connect_pool, migrate
from recon.embedded import EmbeddedPostgres, TemporalDevServer, port_open
from recon.mail.smtp_sink import MailSink

MAIL_PORT = 1025


@dataclass
class RunningStack:
    temporal: TemporalDevServer
    postgres: EmbeddedPostgres
    mail: MailSink | None = None  # the loopback mail server, when this process runs one

    @property
    def ui_url(self) -> str:
        return f"http://localhost:{self.temporal.ui_port}"

    def settings(self, base: Settings | None = None) -> Settings:
        return replace(base or load_settings(), temporal_address=self.temporal.address,
                       database_url=self.postgres.url)


@contextlib.contextmanager
def embedded_stack(state: Path, port: int, ui_port: int, persistent: bool) -> Iterator[RunningStack]:
    postgres = EmbeddedPostgres(state)
    temporal = TemporalDevServer(state, port=port, ui_port=ui_port, persistent=persistent)
    postgres.start()
    try:
        temporal.start()
        try:
            yield RunningStack(temporal, postgres)
        finally:
            temporal.stop()
    finally:
        postgres.stop()


async def prepare_database(url: str) -> None:
    pool = await connect_pool(url)
    try:
        await migrate(pool)
    finally:
        await pool.close()


@contextlib.contextmanager
def loopback_mail(maildir: Path) -> Iterator[MailSink | None]:
    """The embedded mail server (port 1025, else any free port), unless SMTP_URL is set in the
    environment: then mail goes there and nothing is started."""
    if os.environ.get("SMTP_URL"):
        yield None
        return
    try:
        sink = MailSink(maildir, port=0 if port_open(MAIL_PORT) else MAIL_PORT).start()
    except OSError:  # 1025 was taken between the check and the bind
        sink = MailSink(maildir).start()
    try:
        yield sink
    finally:
        sink.stop()


def run_dev(state: Path, port: int, ui_port: int, with_worker: bool, announce) -> None:
    """Blocks until Ctrl-C or SIGTERM, then stops everything it started."""
    with embedded_stack(state, port, ui_port, persistent=True) as stack, \
            loopback_mail(state / "mail") as mail:
        stack.mail = mail
        asyncio.run(prepare_database(stack.postgres.url))
        env = {
            "TEMPORAL_ADDRESS": stack.temporal.address,
            "DATABASE_URL": stack.postgres.url,
            "RECON_TEMPORAL_UI": stack.ui_url,
        }
        if mail is not None:
            env["SMTP_URL"] = mail.url
        write_env_file(state / ENV_FILE_NAME, env)
        announce(stack)
        settings = stack.settings()
        if with_worker:
            from worker import run_worker

            asyncio.run(run_worker(settings))
        else:
            asyncio.run(_wait_for_stop())
    (state / ENV_FILE_NAME).unlink(missing_ok=True)


async def _wait_for_stop() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
