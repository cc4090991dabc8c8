"""How fast the outbox leaves, and how soon a handover note is in the finance head's inbox.

    uv run python bench/mail.py [--messages N] [--senders S] [--lanes L] [--handovers H]

Starts an embedded PostgreSQL in a temporary directory and a loopback SMTP server (aiosmtpd, in a
thread of this process, recording when each message arrived), then runs S real `recon sender`
processes with L lanes each, as production would, and measures:

  1. throughput: N messages queued in one statement (one NOTIFY wakes the senders); messages per
     second from the INSERT to the last message accepted by the server; every message must
     arrive exactly once (distinct Message-IDs) or the bench says REPEAT;
  2. queue-to-inbox latency of a handover note: H notes queued one at a time the way
     `record_handover` queues them (`recon.store.outbox.enqueue`, a committed transaction), 100 ms
     apart so the senders are idle each time (woken by LISTEN/NOTIFY, not by the poll); from
     just before the enqueue to the server's acceptance; median and p99;
  3. the at-least-once window the senders measured themselves: from the server's 250 to the
     COMMIT that marks the row sent (median and p99 of each sender, from its stop log line).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recon.mail.smtp_sink import MaildirHandler, MailSink  # noqa: E402
from recon.runtime.embedded import EmbeddedPostgres  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.store.outbox import Message, enqueue  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")
KEY = re.compile(rb"^Idempotency-Key: (.+?)\r?$", re.M)
MSGID = re.compile(rb"^Message-ID: (.+?)\r?$", re.M | re.I)


class TimedHandler(MaildirHandler):
    """The sink, noting when each message arrived (monotonic clock, this process)."""

    def __init__(self, maildir: Path) -> None:
        super().__init__(maildir)
        self.arrived: dict[str, float] = {}
        self.ids: list[bytes] = []
        self.cond = threading.Condition()

    async def handle_DATA(self, server, session, envelope) -> str:
        reply = await super().handle_DATA(server, session, envelope)
        now = time.monotonic()
        content = envelope.original_content or envelope.content
        key, mid = KEY.search(content), MSGID.search(content)
        with self.cond:
            if key:
                self.arrived.setdefault(key.group(1).decode().strip(), now)
            if mid:
                self.ids.append(mid.group(1).strip())
            self.cond.notify_all()
        return reply


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


async def bench(args: argparse.Namespace, state: Path) -> None:
    postgres = EmbeddedPostgres(state)
    url = postgres.start()
    handler = TimedHandler(state / "mail")
    sink = MailSink(state / "mail", handler).start()
    pool = await connect_pool(url, max_size=4)
    senders: list[subprocess.Popen] = []
    logs = [state / f"sender-{n}.log" for n in range(args.senders)]
    try:
        await migrate(pool)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RECON_")}
        env.update(DATABASE_URL=url, SMTP_URL=sink.url, RECON_SENDER_LANES=str(args.lanes),
                   RECON_HOME=str(state / "home"), PYTHONUNBUFFERED="1")
        for log in logs:
            senders.append(subprocess.Popen(
                [sys.executable, "-m", "recon.cli", "sender"], cwd=ROOT, env=env,
                stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        await _wait(lambda: all("sender started" in p.read_text(errors="replace") for p in logs),
                    60, "the senders to start")

        # 1. throughput
        keys = [f"recon-2031-01-01-bench:msg:{i:06d}" for i in range(args.messages)]
        started = time.monotonic()
        await pool.execute(
            "INSERT INTO outbox (key, workflow_id, kind, recipient, subject, body)"
            " SELECT k, 'recon-2031-01-01-bench', 'debit-note', 'accounts@supplier.example',"
            " 'Bench ' || k, repeat('A line of a realistic summary body. ', 40)"
            " FROM unnest($1::text[]) AS k", keys)
        await _wait(lambda: all(k in handler.arrived for k in keys), 600, "every message")
        elapsed = max(handler.arrived[k] for k in keys) - started
        await asyncio.sleep(0.5)
        repeats = len(handler.ids) - len(set(handler.ids))

        # 2. handover-note latency
        latencies = []
        for n in range(args.handovers):
            await asyncio.sleep(0.1)
            key = f"recon-2031-01-02-bench:handover:{n + 1}"
            t0 = time.monotonic()
            async with pool.acquire() as conn:
                await enqueue(conn, Message(
                    key=key, workflow_id="recon-2031-01-02-bench", kind="handover",
                    recipient="finance.head@distributor.example",
                    subject=f"Decision needed: bench {n}", body="Run needs a decision.\n" * 10))
            await _wait(lambda k=key: k in handler.arrived, 30, f"handover note {n}")
            latencies.append(handler.arrived[key] - t0)
    finally:
        for process in senders:
            process.send_signal(signal.SIGTERM)
        for process in senders:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
        await pool.close()
        sink.stop()
        postgres.stop()

    windows = []
    for log in logs:
        text = ANSI.sub("", log.read_text(errors="replace"))
        sent = re.findall(r"sent=(\d+)", text)
        p50 = re.findall(r"window_p50_ms=([\d.]+)", text)
        p99 = re.findall(r"window_p99_ms=([\d.]+)", text)
        windows.append((int(sent[-1]) if sent else 0, p50[-1] if p50 else "?",
                        p99[-1] if p99 else "?"))

    print(f"senders: {args.senders} x {args.lanes} lanes, loopback aiosmtpd, embedded Postgres")
    print(f"throughput: {args.messages} messages in {elapsed:.2f} s = "
          f"{args.messages / elapsed:.0f} messages/s; "
          f"{'0 repeats (OK)' if repeats == 0 else f'{repeats} REPEATS'}")
    print(f"handover note queue-to-inbox ({len(latencies)} notes): median "
          f"{statistics.median(latencies) * 1000:.1f} ms, p99 {_pct(latencies, 0.99) * 1000:.1f} ms, "
          f"max {max(latencies) * 1000:.1f} ms")
    for n, (sent, p50, p99) in enumerate(windows, 1):
        print(f"sender {n}: sent {sent}; at-least-once window (250 -> COMMIT) median {p50} ms, "
              f"p99 {p99} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--senders", type=int, default=1)
    parser.add_argument("--lanes", type=int, default=4)
    parser.add_argument("--handovers", type=int, default=100)
    args = parser.parse_args()
    if min(args.messages, args.senders, args.lanes, args.handovers) < 1:
        raise SystemExit("every number must be at least 1")
    state = Path(tempfile.mkdtemp(prefix="recon-bench-mail-"))
    try:
        asyncio.run(bench(args, state))
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
