"""How fast the IMAP reader takes a night's mail from a real mail server.

    uv run python bench/imap_fetch.py [--messages N] [--repeats R] [--page P] [--tls]

Starts Debian's Dovecot on loopback in a temporary directory (recon/runtime/imap_server.py;
`apt-get install dovecot-imapd`), APPENDs N supplier mails with one small PDF each (a one-page
PDF made with pypdf, about 1 KB, plus the mail's text), then R times reads the whole folder with
`recon.sources.imap.read_new` in pages of P messages from mark 0, as a night does: sizes and
Message-IDs first, then the bodies with BODY.PEEK[]. Prints each run's messages per second and
the median, and checks every run took each message once, in UID order. Reading changes nothing,
so every run reads the same mailbox. With --tls the reader connects over imaps://.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aioimaplib  # noqa: E402
from pypdf import PdfWriter  # noqa: E402

from recon.runtime.imap_server import Account, DovecotServer, dovecot_path  # noqa: E402
from recon.sources.imap import read_new  # noqa: E402


def invoice_mail(n: int, pdf: bytes) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"] = "billing@supplier.example", "ap@distributor.example"
    msg["Subject"], msg["Message-ID"] = f"Invoice INV-{n}", make_msgid(f"inv{n}", "supplier.example")
    msg.set_content(f"Please find invoice INV-{n} attached.\n")
    msg.add_attachment(pdf, maintype="application", subtype="pdf", filename=f"INV-{n}.pdf")
    return msg.as_bytes()


def one_page_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=595, height=842)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


async def seed(account: Account, count: int) -> float:
    pdf = one_page_pdf()
    client = aioimaplib.IMAP4(host=account.host, port=account.plain_port, timeout=60)
    await client.wait_hello_from_server()
    await client.login(account.user, account.password)
    started = time.perf_counter()
    for n in range(1, count + 1):
        response = await client.append(invoice_mail(n, pdf), mailbox="INBOX")
        if response.result != "OK":
            raise SystemExit(f"APPEND refused: {response}")
    await client.logout()
    return time.perf_counter() - started


async def read_all(account: Account, page: int) -> tuple[float, int, int]:
    started = time.perf_counter()
    uids: list[int] = []
    size = 0
    mark, validity = 0, None
    while True:
        read = await read_new(account.url(), account.password, uidvalidity=validity, after_uid=mark,
                              limit=page)
        if not read.items:
            break
        uids += [i.uid for i in read.items]
        size += sum(len(i.raw or b"") for i in read.items)
        mark, validity = read.highest_uid, read.uidvalidity
    elapsed = time.perf_counter() - started
    if uids != sorted(set(uids)):
        raise SystemExit("REPEAT: a message came twice or out of order")
    return elapsed, len(uids), size


async def main(args: argparse.Namespace) -> None:
    if dovecot_path() is None:
        raise SystemExit("dovecot is not installed (apt-get install dovecot-imapd)")
    root = Path(tempfile.mkdtemp(prefix="recon-bench-imap-"))
    root.chmod(0o755)  # Dovecot's own user reads the mail below it
    server = DovecotServer(root / "server", tls=args.tls).start()
    try:
        if args.tls:
            os.environ["SSL_CERT_FILE"] = str(server.certificate)
        account = server.add_account()
        seconds = await seed(account, args.messages)
        print(f"seeded {args.messages} messages in {seconds:.1f} s ({args.messages / seconds:.0f}/s, APPEND)")
        rates = []
        for run in range(1, args.repeats + 1):
            elapsed, count, size = await read_all(account, args.page)
            if count != args.messages:
                raise SystemExit(f"LOST: read {count} of {args.messages}")
            rates.append(count / elapsed)
            print(f"run {run}: {count} messages, {size / 2**20:.1f} MiB in {elapsed:.2f} s: "
                  f"{count / elapsed:.0f} messages/s")
        print(f"median of {args.repeats}: {statistics.median(rates):.0f} messages/s "
              f"({'imaps' if args.tls else 'imap'}, pages of {args.page})")
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--page", type=int, default=500, help="read_new's limit per call")
    parser.add_argument("--tls", action="store_true", help="read over imaps:// (self-signed)")
    asyncio.run(main(parser.parse_args()))
