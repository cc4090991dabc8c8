"""Hostile mail in a mailbox source, against a real Dovecot on loopback (docs/sources.md, "What
cannot be used"): a 50 MB attachment, zip and gzip bombs, malformed MIME (a broken boundary, bad
base64, an unknown charset, NULs and line breaks in headers, parts nested past the parser's
recursion), 500 attachments, and 10,000 messages in the folder. Each is filed alone with its
reason in one line (`recon status RUN`), archives are never expanded, and the night goes on and
imports the good mail beside them: once through Temporal with a real worker, the big folder
through the fetch activity's code path (a whole night per case would only add minutes)."""

from __future__ import annotations

import asyncio
import gzip
import io
import os
import time
import zipfile
from datetime import date
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client

from recon.documents.formats.reading import PartyIds
from recon.documents.layouts import Document, DocumentLine
from recon.runtime.dev_mailbox import example_mails
from recon.sources.fetch import Night, fetch_night
from recon.sources.spec import parse
from recon.store import sources
from recon.tools import ubl_writer
from tests.fakes.dovecot import deliver, deliver_files
from tests.helpers import recon_cli, settings_for, start
from tests.system.test_import_formats import Suppliers
from tests.system.test_inbox import _message
from tests.system.test_load_cli import fresh_database
from tests.system.test_sources import _folders

STRANGER = "someone@else.example"
BOMB_BYTES = 200 * 2**20  # what the archives would expand to


def _zip_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("invoice.xml", b"\0" * BOMB_BYTES)
    return buffer.getvalue()


def _raw(message_id: str, parts: bytes, content_type: bytes = b'multipart/mixed; boundary="AAA"') -> bytes:
    return (b"From: " + STRANGER.encode() + b"\r\nTo: ap@distributor.example\r\nSubject: Invoice\r\n"
            b"Message-ID: " + message_id.encode() + b"\r\nMIME-Version: 1.0\r\n"
            b"Content-Type: " + content_type + b"\r\n\r\n" + parts)


def hostile(tag: str) -> dict[str, bytes]:
    """Each hostile mail by the words its filing reason must hold."""
    big = _message(STRANGER, f"<big-{tag}@x>", attachments=[
        ("invoice.pdf", "application/pdf", os.urandom(50 * 2**20))]).as_bytes()
    many = _message(STRANGER, f"<many-{tag}@x>", attachments=[
        (f"invoice-{n}.csv", "text/csv", b"invoice_no,INV-%d\n" % n) for n in range(500)]).as_bytes()
    nested = b"".join(b'--B%d\r\nContent-Type: multipart/mixed; boundary="B%d"\r\n\r\n' % (n, n + 1)
                      for n in range(2000))
    return {
        "over the 25,000,000-byte limit (RECON_MAIL_MAX_MESSAGE_BYTES)": big,
        "500 attachments, over the limit of 100 a message (RECON_MAIL_MAX_ATTACHMENTS)": many,
        "zip-bomb": _message(STRANGER, f"<zip-{tag}@x>", attachments=[
            ("invoices.zip", "application/zip", _zip_bomb())]).as_bytes(),
        "gzip-bomb": _message(STRANGER, f"<gz-{tag}@x>", attachments=[
            ("invoice.xml.gz", "application/gzip", gzip.compress(b"0" * BOMB_BYTES))]).as_bytes(),
        "broken-boundary": _raw(f"<boundary-{tag}@x>",
                                b"--AAA\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment;"
                                b" filename=a.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0x\r\n"
                                b"--BBB--\r\n"),
        "bad-base64": _raw(f"<base64-{tag}@x>",
                           b"--AAA\r\nContent-Type: application/xml\r\nContent-Disposition: attachment;"
                           b" filename=a.xml\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!*not@base64=\r\n"
                           b"--AAA--\r\n"),
        "cannot be read (LookupError: unknown encoding: x-no-such)": _raw(
            f"<charset-{tag}@x>", b"invoice \xff\xfe\r\n", b"text/plain; charset=x-no-such"),
        "header-injection": _raw(f"<inj\x00ected-{tag}@x>\r\n\tBcc: victim@else.example",
                                 b"--AAA\r\nContent-Type: text/csv\r\nContent-Disposition: attachment;"
                                 b' filename="../../etc/pa\r\n sswd\x00.csv"\r\n\r\ninvoice_no,INV-1\r\n'
                                 b"--AAA--\r\n"),
        "cannot be read (RecursionError": _raw(f"<nested-{tag}@x>", nested + b"\r\nhi\r\n",
                                               b'multipart/mixed; boundary="B0"'),
    }


async def _imap_source(env: dict[str, str], wh: str, url: str) -> str:
    added = await asyncio.to_thread(recon_cli, env, "source", "add", wh, url, "--password-env", "AP_PASSWORD")
    assert added.returncode == 0, added.stderr
    return added.stdout.split()[1]


async def test_a_night_files_each_hostile_mail_alone_and_reconciles_the_good_mail(
        stack, client: Client, night, tmp_path: Path, spawn_worker, imap_server, imap_account) -> None:
    day, wh, queue = night
    exports, _drop = _folders(tmp_path, wh)
    bad = hostile(wh)
    deliver_files(imap_server, imap_account, bad.values())
    await deliver(imap_account, example_mails())
    async with fresh_database(stack.database_url, f"hostile_{os.getpid()}_{wh}") as (url, pool):
        env = stack.env(DATABASE_URL=url, RECON_TASK_QUEUE=queue, AP_PASSWORD=imap_account.password,
                        SSL_CERT_FILE=str(imap_server.certificate))
        erp = await asyncio.to_thread(recon_cli, env, "source", "add", wh, f"erp:{exports}",
                                      "--date-format", "DD-MM-YYYY", "--amount-format", "indian")
        assert erp.returncode == 0, erp.stderr
        mailbox = await _imap_source(env, wh, imap_account.url())
        spawn_worker(queue, DATABASE_URL=url, AP_PASSWORD=imap_account.password,
                     SSL_CERT_FILE=str(imap_server.certificate))
        handle = await start(client, settings_for(queue), day, wh)
        summary = await asyncio.wait_for(handle.result(), 300)
        assert summary.status == "Completed"
        ledger = await pool.fetch("SELECT invoice_no, kind, amount_paise FROM ledger_entries")
        assert [tuple(r) for r in ledger] == [("S103:MS-0042", "price", 60_000)], "the good mail reconciled"
        assert await pool.fetchval("SELECT count(*) FROM invoices") == 3

        status = await asyncio.to_thread(recon_cli, env, "status", handle.id)
        assert status.returncode == 0, status.stderr
        assert (f"from source {mailbox} ({imap_account.url()}): 3 imported (3 documents), "
                f"{len(bad)} filed") in status.stdout
        filed = [line for line in status.stdout.splitlines()
                 if line.startswith(f"  filed from source {mailbox}:")]
        assert len(filed) == len(bad), status.stdout
        for words in bad:
            if " " in words:  # the reason's own words; the others are filed for what they lack
                assert sum(words in line for line in filed) == 1, (words, "\n".join(filed))
        rows = await pool.fetch("SELECT message_id, reason FROM source_items WHERE outcome = 'filed'")
        assert all("\x00" not in r["message_id"] + r["reason"] and "\n" not in r["reason"] for r in rows)
        assert any(r["message_id"].endswith(f"ected-{wh}@x>") for r in rows), "the NUL is gone, the id kept"
        archives = await pool.fetch("SELECT reason FROM source_items WHERE message_id IN ($1, $2)",
                                    f"<zip-{wh}@x>", f"<gz-{wh}@x>")
        assert len(archives) == 2 and all("its supplier cannot be told" in r["reason"] for r in archives), \
            "an archive is one file of unknown content, never expanded"


async def test_ten_thousand_messages_are_each_taken_once_within_two_minutes(
        pool: asyncpg.Pool, night, imap_server, imap_account, monkeypatch: pytest.MonkeyPatch) -> None:
    day, wh, _queue = night
    s = Suppliers(wh)
    await s.create(pool, day, wh)
    ids = PartyIds(gstin=s.gstin, name="A Ltd")

    def mail(n: int) -> bytes:
        if n % 1000:
            return _message(STRANGER, f"<note-{n}-{wh}@x>", body="Our catalogue, with prices.").as_bytes()
        doc = Document(f"BIG-{wh}-{n}", s.a, "A Ltd", day, "PO-NONE",
                       [DocumentLine("SKU-1001", "Rice", 10, 10_000)])
        return _message(f"{s.a.lower()}@supplier.example", f"<inv-{n}-{wh}@x>", attachments=[
            ("invoice.xml", "application/xml", ubl_writer.write(doc, ids).encode())]).as_bytes()

    deliver_files(imap_server, imap_account, (mail(n) for n in range(1, 10_001)))
    monkeypatch.setenv("AP_PASSWORD", imap_account.password)
    spec = parse(imap_account.url(), password_env="AP_PASSWORD")
    sid = await sources.add(pool, wh, spec.kind, spec.url, spec.settings, spec.secret_ref)
    began = time.monotonic()
    taken = await fetch_night(pool, Night(f"recon-{day}-{wh}", date.fromisoformat(day), wh))
    seconds = time.monotonic() - began
    print(f"10,000 messages fetched and recorded in {seconds:.1f} s ({10_000 / seconds:.0f}/s)")
    assert (taken.imported, taken.filed) == (10, 9_990)
    assert seconds < 120, f"{seconds:.0f} s for 10,000 messages"
    assert await pool.fetchval("SELECT count(*) FROM source_items WHERE source_id = $1", sid) == 10_000
    assert await pool.fetchval("SELECT count(DISTINCT uid) FROM source_items WHERE source_id = $1",
                               sid) == 10_000
    assert await pool.fetchval("SELECT count(*) FROM invoices WHERE warehouse = $1", wh) == 10
