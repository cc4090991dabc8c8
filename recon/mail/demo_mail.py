"""The demo's mail: a sender delivers the run's outbox to the loopback mail server, and the demo
says where the messages are, so a user can open the debit notes the night sent."""

from __future__ import annotations

import asyncio
import time

import asyncpg

from recon.mail.report import delivery
from recon.mail.sender import Sender, SenderConfig
from recon.mail.smtp_url import parse_smtp_url
from recon.runtime.config import load_settings
from recon.store.mail_deliveries import undelivered


async def deliver_demo_mail(stack, pool: asyncpg.Pool, workflow_id: str,
                            timeout: float = 30) -> str:
    settings = load_settings()
    sender = Sender(stack.postgres.url, SenderConfig(
        target=parse_smtp_url(stack.mail.url), mail_from=settings.mail_from,
        finance_head_email=settings.finance_head_email, retry_seconds=0.5, poll_seconds=1.0,
    ))
    stop = asyncio.Event()
    task = asyncio.create_task(sender.run(stop))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and await undelivered(pool, workflow_id):
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
    notes = await delivery(pool, workflow_id)
    return (f"mail: {notes.line()}; {sender.stats.sent} messages in "
            f"{stack.mail.handler.maildir}/new (open them with any mail client, or "
            f"`recon mail show KEY`)")
