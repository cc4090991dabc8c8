"""`recon import --maildir`: each message's attachments (and an invoice body) become documents,
each message is dealt with once, what cannot be used is filed under .Unreadable with its reason,
and a conflict between messages refuses the whole inbox with nothing written or moved."""

from __future__ import annotations

import asyncio
import mailbox
from email.message import EmailMessage
from pathlib import Path

import asyncpg

from recon.documents.formats.pdf_text import write_scan_pdf
from recon.documents.formats.reading import PartyIds
from recon.documents.layouts import Document, DocumentLine, render
from recon.tools import gst_writer, ubl_writer
from tests.helpers import recon_cli
from tests.system.test_import_formats import Suppliers, _gstin


def _message(sender: str, message_id: str, body: str = "Please find our invoice attached.",
             attachments: list[tuple[str, str, bytes]] = ()) -> EmailMessage:
    msg = EmailMessage()
    msg["From"], msg["To"] = sender, "accounts@distributor.example"
    msg["Subject"], msg["Message-ID"] = "Invoice", message_id
    msg.set_content(body)
    for name, ctype, data in attachments:
        maintype, subtype = ctype.split("/")
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return msg


async def _import(stack, day: str, warehouse: str, box: Path):
    return await asyncio.to_thread(recon_cli, stack.env(), "import", "--maildir", str(box),
                                   "--date", day, "--warehouse", warehouse)


async def test_a_maildir_inbox_is_imported_once_and_files_what_it_cannot_read(
        pool: asyncpg.Pool, stack, night, tmp_path: Path) -> None:
    day, warehouse, _queue = night
    s = Suppliers(warehouse)
    await s.create(pool, day, warehouse)
    a_mail = f"{s.a.lower()}@supplier.example"
    a_ids = PartyIds(gstin=s.gstin, name="A Ltd")
    doc = Document(f"M-{warehouse}-1", s.a, "A Ltd", day, "PO-NONE",
                   [DocumentLine("SKU-1001", "Rice", 10, 10_000)])
    ubl = ubl_writer.write(doc, a_ids).encode()
    csv_body = render(Document(f"M-{warehouse}-2", s.c, "C Ltd", day, "PO-NONE",
                               [DocumentLine("SKU-1001", "Rice", 1, 10_000)]), "csv")
    stranger = gst_writer.write(doc, PartyIds(gstin=_gstin("stranger"))).encode()
    box_path = tmp_path / "Maildir"
    box = mailbox.Maildir(box_path, create=True)
    for msg in (
        _message(f"A Ltd <{a_mail}>", "<m1@a>", attachments=[
            ("invoice.xml", "application/xml", ubl),
            ("invoice.pdf", "application/pdf", write_scan_pdf()),  # a scan, from A's address
            ("logo.png", "image/png", b"\x89PNG not really")]),
        _message("someone@else.example", "<m2@c>", body=csv_body),  # the body is the invoice
        _message("spam@else.example", "<m3@spam>", body="Cheap watches"),
        _message("x@else.example", "<m4@x>", attachments=[
            ("e-invoice.json", "application/json", stranger)]),
        _message(f"A Ltd <{a_mail}>", "<m5@a>", body="Reminder: our invoice again.",
                 attachments=[("invoice.xml", "application/xml", ubl)]),  # the same file again
        _message(a_mail, "<m8@a>", attachments=[("photo.jpg", "image/jpeg", b"\xff\xd8 jpeg")]),
    ):
        box.add(msg)

    done = await _import(stack, day, warehouse, box_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"imported 4 invoices for {day} at {warehouse}" in out, out
    assert "messages: 4 imported, 0 seen before, 2 filed under .Unreadable" in out
    assert "<m3@spam>): no invoice in the message" in out
    assert "<m4@x>): e-invoice.json (message" in out and "its supplier cannot be told" in out
    stored = {r["invoice_no"]: (r["supplier_id"], r["format"]) for r in await pool.fetch(
        "SELECT * FROM invoices WHERE warehouse = $1", warehouse)}
    assert stored[f"M-{warehouse}-1"] == (s.a, "ubl")
    assert stored[f"M-{warehouse}-2"] == (s.c, "text")
    scans = sorted(v for k, v in stored.items() if not k.startswith("M-"))
    # By A's address; the logo beside a document is no document, the photo alone is a scan.
    assert scans == [(s.a, "image-scan"), (s.a, "pdf-scan")]
    outcomes = dict(await pool.fetch(
        "SELECT message_id, outcome FROM mail_messages WHERE warehouse = $1", warehouse))
    assert outcomes == {"<m1@a>": "imported", "<m2@c>": "imported", "<m3@spam>": "unreadable",
                        "<m4@x>": "unreadable", "<m5@a>": "imported", "<m8@a>": "imported"}
    assert len(list((box_path / ".Unreadable" / "cur").iterdir())) == 2
    assert not list((box_path / "new").iterdir())
    assert all(p.name.endswith(":2,S") for p in (box_path / "cur").iterdir())

    again = await _import(stack, day, warehouse, box_path)
    assert again.returncode == 0 and "messages: 0 imported, 4 seen before" in again.stdout

    other = ubl_writer.write(Document(doc.invoice_no, s.a, "A Ltd", day, "PO-NONE",
                                      [DocumentLine("SKU-1001", "Rice", 9, 10_000)]), a_ids)
    box.add(_message(a_mail, "<m6@a>", attachments=[("corrected.xml", "application/xml",
                                                     other.encode())]))
    box.add(_message(a_mail, "<m7@a>", attachments=[("corrected-again.xml", "application/xml",
                                                     other.replace("9<", "8<").encode())]))
    refused = await _import(stack, day, warehouse, box_path)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert (f"corrected.xml (message <m6@a>) and corrected-again.xml (message <m7@a>) all carry "
            f"invoice number {doc.invoice_no} of {s.a}") in refused.stderr
    assert len(list((box_path / "new").iterdir())) == 2, "nothing moved"
    assert await pool.fetchval("SELECT count(*) FROM mail_messages WHERE warehouse = $1",
                               warehouse) == 6, "nothing recorded"
