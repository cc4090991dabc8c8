"""The embedded mail server: aiosmtpd on loopback, every message it accepts kept in a Maildir.

`recon dev` and `recon demo` run one so the debit notes a night sends can be opened as files
(`.recon/mail/new/…`, any mail client reads a Maildir). It accepts everything and relays
nothing. Production points SMTP_URL at a real server (or Mailpit, in docker-compose).

    uv run python -m recon.mail.smtp_sink --port 1025 --maildir .recon/mail
"""

from __future__ import annotations

import argparse
import mailbox
import signal
import threading
import time
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope, Session

from recon.runtime.embedded import free_port


class MaildirHandler:
    """aiosmtpd handler: one Maildir file per accepted message (written, then renamed into
    `new/`, so a reader never sees half a message)."""

    def __init__(self, maildir: Path) -> None:
        self.maildir = Path(maildir)
        self.box = mailbox.Maildir(self.maildir, create=True)
        self.accepted = 0
        self._lock = threading.Lock()

    async def handle_DATA(self, server, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or envelope.content
        data = content if isinstance(content, bytes) else str(content).encode()
        with self._lock:
            self.box.add(data)
            self.accepted += 1
        return "250 2.0.0 Message accepted for delivery"


class MailSink:
    """A loopback SMTP server in its own thread (the caller's event loop never serves it)."""

    def __init__(self, maildir: Path, handler: MaildirHandler | None = None,
                 host: str = "127.0.0.1", port: int = 0, **smtp_options: object) -> None:
        """`smtp_options` go to aiosmtpd's SMTP (STARTTLS, AUTH: what the tests need)."""
        self.handler = handler or MaildirHandler(maildir)
        self.host = host
        self.port = port or free_port()
        self.smtp_options = smtp_options
        self._controller: Controller | None = None

    @property
    def url(self) -> str:
        return f"smtp://{self.host}:{self.port}"

    def start(self) -> MailSink:
        self._controller = Controller(self.handler, hostname=self.host, port=self.port,
                                      ready_timeout=10, **self.smtp_options)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def __enter__(self) -> MailSink:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="Loopback SMTP server storing mail in a Maildir.")
    parser.add_argument("--port", type=int, default=1025)
    parser.add_argument("--maildir", type=Path, default=Path(".recon/mail"))
    args = parser.parse_args()
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    with MailSink(args.maildir, port=args.port) as sink:
        print(f"mail sink on {sink.url}, Maildir {args.maildir.resolve()}", flush=True)
        while not stopping.is_set():
            time.sleep(0.2)


if __name__ == "__main__":
    main()
