"""A mailbox source's messages (recon/sources/fetch.py `take_message`): each RFC 5322 message
goes through `recon import --maildir`'s readers and refusals, is recorded with its import in one
transaction, and is taken once: by (UIDVALIDITY, UID), and by its Message-ID when the mailbox is
renumbered. The IMAP protocol itself is recon/sources/imap.py's, tested against Dovecot."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import asyncpg

from recon.documents.formats.reading import PartyIds
from recon.documents.layouts import Document, DocumentLine
from recon.sources.fetch import Fetched, Night, take_message
from recon.store import sources
from recon.tools import ubl_writer
from tests.system.test_import_formats import Suppliers
from tests.system.test_inbox import _message


@dataclass(frozen=True)
class Fetch:
    """One message as the IMAP client hands it over."""

    uidvalidity: int
    uid: int
    message_id: str
    raw: bytes


async def test_messages_are_taken_once_across_retries_and_a_renumbered_mailbox(
        pool: asyncpg.Pool, night) -> None:
    day, warehouse, _queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    sid = await sources.add(pool, warehouse, "imap", f"imap://ap@127.0.0.1:1/{warehouse}", {},
                            "env:AP_PASSWORD")
    doc = Document(f"IM-{warehouse}-1", s.a, "A Ltd", day, "PO-NONE",
                   [DocumentLine("SKU-1001", "Rice", 10, 10_000)])
    ubl = ubl_writer.write(doc, PartyIds(gstin=s.gstin, name="A Ltd")).encode()
    invoice = _message(f"{s.a.lower()}@supplier.example", f"<inv@{warehouse}>",
                       attachments=[("invoice.xml", "application/xml", ubl)]).as_bytes()
    spam = _message("spam@else.example", f"<spam@{warehouse}>", body="Cheap watches").as_bytes()
    tonight = Night(f"recon-{day}-{warehouse}", date.fromisoformat(day), warehouse)
    done = Fetched()

    async def take(validity: int, uid: int, raw: bytes, message_id: str) -> None:
        async with pool.acquire() as conn:
            await take_message(conn, sid, tonight, Fetch(validity, uid, message_id, raw), done)

    await take(7, 1, invoice, f"<inv@{warehouse}>")
    await take(7, 2, spam, f"<spam@{warehouse}>")
    await take(7, 1, invoice, f"<inv@{warehouse}>")  # a retry fetches it again
    await take(8, 5, invoice, f"<inv@{warehouse}>")  # renumbered: the same message, a new UID
    assert (done.imported, done.filed) == (1, 1)
    rows = await pool.fetch("SELECT uidvalidity, uid, outcome, reason, documents FROM source_items"
                            " WHERE source_id = $1 ORDER BY uid", sid)
    assert [(r["uidvalidity"], r["uid"], r["outcome"], r["documents"]) for r in rows] == [
        (7, 1, "imported", 1), (7, 2, "filed", 0)]
    assert rows[1]["reason"].startswith("no invoice in the message")
    assert await pool.fetchval("SELECT count(*) FROM invoices WHERE invoice_no = $1",
                               f"IM-{warehouse}-1") == 1
    assert await pool.fetchval("SELECT outcome FROM mail_messages WHERE message_id = $1",
                               f"<spam@{warehouse}>") == "unreadable", "filed as the Maildir files it"
