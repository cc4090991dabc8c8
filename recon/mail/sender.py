"""The outbox sender: delivers due rows over SMTP, at least once, each in its own transaction.

Per message, on one of a few *lanes* (each with its own Postgres connection and SMTP session):
begin; claim one due row, locked and skipped by every other sender
(`recon.store.mail_deliveries.claim_due`); SMTP MAIL / RCPT / DATA until the server says 250;
mark the row sent (`mark_sent`); commit.

The lock makes senders (in any number of processes) never claim the same row at once; a dead
sender's lock goes with its connection, and its row becomes due again. The only repeat the
design allows is a sender that dies after the server's 250 and before COMMIT: one message per
lane at most, sent again later with the same `Message-ID`. That window is one statement and one
COMMIT long; `SenderStats.windows` measures it.

Woken by LISTEN/NOTIFY (`recon_outbox`, sent by an insert trigger) so a handover note leaves
within milliseconds; polls slowly as a fallback and wakes for the next retry that falls due.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.errors
import statistics
import time
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import parseaddr

import aiosmtplib
import asyncpg
import structlog

from recon.domain.settings_table import default_of
from recon.mail.envelope import build_email, mail_domain, message_id
from recon.mail.failures import SUPPLIER_FACING, Unbuildable, classify, open_delivery_handover
from recon.mail.smtp_url import SmtpTarget
from recon.mail.summary import summary_document
from recon.runtime import failpoints
from recon.store import mail_deliveries as deliveries
from recon.store.db import connect_pool
from recon.store.mail_deliveries import CHANNEL

log = structlog.get_logger("recon.sender")

MAX_RETRY_WAIT = 900.0  # waits double from the first retry up to 15 minutes, for ever
SUMMARY_GRACE = 60.0  # a summary waits this long for its run's untried debit notes
IDLE_CHECK = 5.0  # a session idle this long is checked with NOOP before it carries a message


@dataclass
class SenderStats:
    sent: int = 0
    retried: int = 0
    parked: int = 0
    windows: list[float] = field(default_factory=list)  # seconds from the 250 to COMMIT

    def window_ms(self) -> dict[str, float]:
        """The at-least-once window as measured: median and p99 of 250-to-COMMIT, in ms."""
        if not self.windows:
            return {}
        ordered = sorted(self.windows)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        return {"window_p50_ms": round(statistics.median(ordered) * 1000, 3),
                "window_p99_ms": round(p99 * 1000, 3)}


@dataclass(frozen=True)
class SenderConfig:
    target: SmtpTarget
    mail_from: str
    finance_head_email: str
    # The settings' defaults (recon.domain.settings_table), for a sender made without settings.
    lanes: int = default_of("RECON_SENDER_LANES")
    retry_seconds: float = default_of("RECON_MAIL_RETRY_SECONDS")
    poll_seconds: float = default_of("RECON_MAIL_POLL_SECONDS")
    smtp_timeout: float = 30.0


class _Lane:
    """One SMTP session, opened on first use and again after any error."""

    def __init__(self, config: SenderConfig) -> None:
        self.config = config
        self.client: aiosmtplib.SMTP | None = None
        self.used = time.monotonic()

    async def send(self, msg: EmailMessage, recipient: str) -> None:
        t = self.config.target
        if self.client is not None and time.monotonic() - self.used > IDLE_CHECK:
            # Servers drop idle sessions; find out now, not by failing (and delaying) a message.
            try:
                await self.client.noop()
            except (aiosmtplib.SMTPException, OSError, TimeoutError):
                await self.close()
        if self.client is None or not self.client.is_connected:
            client = aiosmtplib.SMTP(
                hostname=t.host, port=t.port, use_tls=t.use_tls, start_tls=t.start_tls,
                username=t.username, password=t.password, timeout=self.config.smtp_timeout,
                cert_bundle=t.cafile,
            )
            await client.connect()
            self.client = client
        await self.client.send_message(
            msg, sender=parseaddr(self.config.mail_from)[1], recipients=[recipient]
        )
        self.used = time.monotonic()

    async def close(self) -> None:
        client, self.client = self.client, None
        if client is not None and client.is_connected:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.quit(), 2)
            client.close()


class Sender:
    def __init__(self, database_url: str, config: SenderConfig) -> None:
        self.database_url = database_url
        self.config = config
        self.stats = SenderStats()
        self._changed = asyncio.Event()
        self._accepted = 0

    # ------------------------------------------------------------------ wake-ups
    def _notified(self, *_: object) -> None:
        """A row was queued: wake every idle lane (they each watch the Event they saw before
        their last claim, so a notification between claim and wait is never lost)."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _listen(self, stop: asyncio.Event) -> None:
        """Keep one LISTEN connection; if it drops, the slow poll covers until it is back."""
        while not stop.is_set():
            conn = None
            try:
                conn = await asyncpg.connect(self.database_url)
                await conn.add_listener(CHANNEL, self._notified)
                self._notified()  # anything queued while we were not listening
                while not stop.is_set() and not conn.is_closed():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), 1.0)
            except (OSError, asyncpg.PostgresError) as exc:
                log.warning("sender cannot listen for new mail", error=str(exc))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 1.0)
            finally:
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close(timeout=2)

    # ------------------------------------------------------------------ the loop
    async def run(self, stop: asyncio.Event, ready: asyncio.Event | None = None) -> None:
        """Deliver until `stop` is set; a lane finishes the message in hand before it stops."""
        pool = await connect_pool(self.database_url, min_size=1, max_size=self.config.lanes)
        listener = asyncio.create_task(self._listen(stop))
        lanes = [asyncio.create_task(self._lane(pool, stop)) for _ in range(self.config.lanes)]
        log.info("sender started", smtp=self.config.target.describe(), lanes=self.config.lanes)
        if ready is not None:
            ready.set()
        try:
            await stop.wait()
            self._notified()
            await asyncio.gather(*lanes, listener)
        finally:
            for task in (*lanes, listener):
                task.cancel()
            await pool.close()
        log.info("sender stopped", sent=self.stats.sent, retried=self.stats.retried,
                 parked=self.stats.parked, **self.stats.window_ms())

    async def _lane(self, pool: asyncpg.Pool, stop: asyncio.Event) -> None:
        lane = _Lane(self.config)
        try:
            while not stop.is_set():
                changed = self._changed
                try:
                    async with pool.acquire() as conn:
                        if await self.deliver_one(conn, lane):
                            continue
                        wait = await deliveries.seconds_to_next_due(conn)
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                    log.warning("sender lost Postgres; trying again", error=str(exc))
                    wait = 1.0
                except Exception:  # a bug must not silently stop a lane
                    log.exception("sender lane failed; going on")
                    wait = 1.0
                timeout = self.config.poll_seconds if wait is None else \
                    min(self.config.poll_seconds, max(0.01, wait))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), timeout)
        finally:
            await lane.close()

    async def deliver_one(self, conn: asyncpg.Connection, lane: _Lane) -> bool:
        """Claim, send and mark one due message in one transaction; False if none is due."""
        async with conn.transaction():
            row = await deliveries.claim_due(conn)
            if row is None:
                return False
            rendered = None
            if row["kind"] == "summary":
                if await deliveries.untried_notes(conn, row["workflow_id"], row["created_at"],
                                                  SUMMARY_GRACE):
                    # Let the run's debit notes go first, so the summary reports their delivery.
                    await deliveries.postpone_briefly(conn, row["key"])
                    return True
            try:
                if row["kind"] == "summary":
                    async with conn.transaction():  # a savepoint: a failed render keeps the claim
                        rendered = await summary_document(conn, row["workflow_id"])
                try:
                    msg = build_email(row, self.config.mail_from,
                                      subject=rendered.subject if rendered else None,
                                      text=rendered.text if rendered else None,
                                      html=rendered.html if rendered else None)
                except (ValueError, TypeError, email.errors.MessageError) as exc:
                    # A CR/LF in a supplier's name or address: the same row can never be built,
                    # so it is parked (with a delivery handover), never retried for ever.
                    raise Unbuildable(exc) from exc
                await lane.send(msg, row["recipient"])
            except Exception as exc:  # SMTP replies, no server, or a message we cannot build
                await lane.close()
                await self._failed(conn, row, exc)
                return True
            accepted = time.perf_counter()
            self._accepted += 1
            failpoints.hit("sender_accepted", self._accepted)
            await deliveries.mark_sent(
                conn, row["key"], message_id(row["key"], mail_domain(self.config.mail_from)),
                rendered.subject if rendered else None, rendered.text if rendered else None,
                rendered.html if rendered else None,
            )
        self.stats.windows.append(time.perf_counter() - accepted)
        self.stats.sent += 1
        return True

    async def _failed(self, conn: asyncpg.Connection, row: asyncpg.Record,
                      exc: BaseException) -> None:
        failure = classify(exc)
        if failure.permanent:
            await deliveries.park_refused(conn, row["key"], failure.reply)
            self.stats.parked += 1
            log.warning("mail refused for good; parked", key=row["key"], reply=failure.reply)
            if row["kind"] in SUPPLIER_FACING:
                await open_delivery_handover(conn, row, failure.reply,
                                             self.config.finance_head_email)
            return
        wait = min(MAX_RETRY_WAIT, self.config.retry_seconds * 2 ** row["attempts"])
        await deliveries.retry_later(conn, row["key"], failure.reply, wait)
        self.stats.retried += 1
        log.info("mail not delivered yet; will retry", key=row["key"], reply=failure.reply,
                 attempts=row["attempts"] + 1, wait_seconds=wait)


def sender_config(settings) -> SenderConfig | None:
    """From Settings; None when no SMTP_URL is set (then nothing is sent, and we say so)."""
    from recon.mail.smtp_url import parse_smtp_url

    if not settings.smtp_url:
        return None
    return SenderConfig(
        target=parse_smtp_url(settings.smtp_url), mail_from=settings.mail_from,
        finance_head_email=settings.finance_head_email, lanes=settings.sender_lanes,
        retry_seconds=settings.mail_retry_seconds, poll_seconds=settings.mail_poll_seconds,
    )
