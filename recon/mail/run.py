"""Starting the sender: on its own (`recon sender`) or beside a worker (`recon worker`)."""

from __future__ import annotations

import asyncio
import signal

import structlog

from recon.mail.sender import Sender, sender_config
from recon.runtime.config import Settings

log = structlog.get_logger("recon.sender")


def start_sender(settings: Settings, stop: asyncio.Event) -> asyncio.Task | None:
    """A sender task that ends when `stop` is set; None (and one warning) without SMTP_URL."""
    config = sender_config(settings)
    if config is None:
        log.warning("no SMTP_URL: this process does not deliver the outbox "
                    "(`recon dev` sets one; production sets SMTP_URL)")
        return None
    assert settings.database_url
    task = asyncio.create_task(Sender(settings.database_url, config).run(stop))
    task.add_done_callback(_report_death)
    return task


def _report_death(task: asyncio.Task) -> None:
    """A sender that dies inside a worker must say so at once, not when the worker stops."""
    if not task.cancelled() and task.exception() is not None:
        log.error("the outbox sender stopped: mail is not delivered by this process",
                  error=str(task.exception()))


async def run_sender(settings: Settings, lanes: int | None = None) -> None:
    """`recon sender`: deliver until SIGINT/SIGTERM; the message in hand is finished first."""
    config = sender_config(settings)
    if config is None:
        raise ValueError("SMTP_URL is not set: nowhere to send mail (run `recon dev`, or set "
                         "SMTP_URL=smtp+starttls://user:pass@host:587)")
    if lanes is not None:
        if lanes < 1:
            raise ValueError(f"--lanes must be at least 1, got {lanes}")
        from dataclasses import replace

        config = replace(config, lanes=lanes)
    from recon.store.db import connect_pool, migrate

    pool = await connect_pool(settings.database_url)
    try:
        await migrate(pool)
    finally:
        await pool.close()
    assert settings.database_url
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await Sender(settings.database_url, config).run(stop)
