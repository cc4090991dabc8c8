"""A mailbox source against a real IMAP server (Dovecot on loopback, tests/fakes/dovecot.py):
the night takes every message below the UIDNEXT its first fetch saw, page by page, each once and
without changing the mailbox; one delivered after the fetch is the next night's; a wrong
password is refused in the server's words. Skipped where the IMAP client or Dovecot is missing."""

from __future__ import annotations

from datetime import date

import asyncpg
import pytest

pytest.importorskip("recon.sources.imap")
dovecot = pytest.importorskip("tests.fakes.dovecot")

from recon.documents.formats.reading import PartyIds  # noqa: E402
from recon.documents.layouts import Document, DocumentLine  # noqa: E402
from recon.domain.errors import SourceRefused  # noqa: E402
from recon.sources import fetch  # noqa: E402
from recon.sources.fetch import Night, fetch_night  # noqa: E402
from recon.sources.spec import parse  # noqa: E402
from recon.store import sources  # noqa: E402
from recon.tools import ubl_writer  # noqa: E402
from tests.system.test_import_formats import Suppliers  # noqa: E402
from tests.system.test_inbox import _message  # noqa: E402


async def test_a_mailbox_night_takes_its_mail_once_and_the_late_mail_next_night(
        pool: asyncpg.Pool, night, imap_account, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch, "IMAP_BATCH", 2)  # several pages in one night
    day, wh, _queue = night
    s = Suppliers(wh)
    await s.create(pool, day, wh)

    def invoice(n: int):
        doc = Document(f"IM-{wh}-{n}", s.a, "A Ltd", day, "PO-NONE",
                       [DocumentLine("SKU-1001", "Rice", 10, 10_000)])
        ubl = ubl_writer.write(doc, PartyIds(gstin=s.gstin, name="A Ltd")).encode()
        return _message(f"{s.a.lower()}@supplier.example", f"<inv{n}@{wh}>",
                        attachments=[("invoice.xml", "application/xml", ubl)])

    await dovecot.deliver(imap_account, [invoice(1), invoice(2), invoice(3), invoice(4),
                                         _message("spam@else.example", f"<spam@{wh}>", body="Cheap")])
    monkeypatch.setenv("AP_PASSWORD", imap_account.password)
    spec = parse(imap_account.url(), password_env="AP_PASSWORD")
    sid = await sources.add(pool, wh, spec.kind, spec.url, spec.settings, spec.secret_ref)
    first = Night(f"recon-{day}-{wh}", date.fromisoformat(day), wh)
    taken = await fetch_night(pool, first)
    assert (taken.imported, taken.filed) == (4, 1)

    await dovecot.deliver(imap_account, [invoice(6)])  # after the night's fetch
    again = await fetch_night(pool, first)  # a retry of the same night: its set is fixed
    assert (again.imported, again.filed) == (0, 0)
    second = Night(f"recon-2026-10-14-{wh}", date(2026, 10, 14), wh)
    assert (await fetch_night(pool, second)).imported == 1
    nights = await pool.fetch("SELECT workflow_id, count(*) AS n FROM source_items WHERE source_id = $1"
                              " GROUP BY workflow_id ORDER BY workflow_id", sid)
    assert [(r["workflow_id"], r["n"]) for r in nights] == [(first.workflow_id, 5), (second.workflow_id, 1)]
    assert await pool.fetchval("SELECT count(*) FROM invoices WHERE warehouse = $1", wh) == 5
    assert all("\\Seen" not in seen for seen in (await dovecot.flags(imap_account)).values()), \
        "read with BODY.PEEK: nothing marked seen"

    monkeypatch.setenv("AP_PASSWORD", "not-the-password")
    with pytest.raises(SourceRefused, match="AUTHENTICATIONFAILED"):
        await fetch_night(pool, Night(f"recon-2026-10-15-{wh}", date(2026, 10, 15), wh))
