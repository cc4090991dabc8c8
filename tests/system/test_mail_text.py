"""Text stays text in mail bodies (issue 39, item 6; docs/mail.md).

Invoice numbers with ESC or U+202E are refused at import now (tests/system/test_import_refusals.py);
rows that hold them anyway (written before that rule, or straight into Postgres), and a supplier
name or PO reference with them, reach no mail raw: the supplier's debit note and the finance
head's summary, text and HTML, show each one as an escape (`\\x1b`, `\\u202e`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import Client

from recon.mail.smtp_sink import MailSink
from recon.tools.seed import seed_night
from tests.fakes.smtp import inbox, mail_database
from tests.helpers import inprocess_worker, settings_for, start, wait_for
from tests.system.test_trust import _bill

pytestmark = pytest.mark.slow

RAW = ("\x1b", "\u202e", "\x07")


async def test_control_and_bidi_characters_arrive_escaped_in_every_mail_body(
    stack, client: Client, night, tmp_path: Path
) -> None:
    day, warehouse, queue = night
    tag = warehouse.upper()
    number = f"BIDI-{tag}-\u202e1gpj.exe\x1b[2J\x07"
    async with mail_database(stack.database_url) as (url, pool):
        await seed_night(pool, day, warehouse, invoices=6, mismatches=0)
        await pool.execute("INSERT INTO suppliers VALUES ('S-BIDI', $1, 'bidi@supplier.example')",
                           "Evil \u202eTraders\x1b[31m")
        await _bill(pool, day, warehouse, number, [("SKU-B1", 9, 100_00, 4, 100_00, 4)],
                    supplier="S-BIDI", layout="csv", po=None)
        with MailSink(tmp_path / "mail") as sink:
            settings = settings_for(queue, database_url=url, smtp_url=sink.url,
                                    mail_retry_seconds=0.2, mail_poll_seconds=1.0)
            async with inprocess_worker(settings):
                handle = await start(client, settings, day, warehouse)
                assert (await asyncio.wait_for(handle.result(), 90)).status == "Completed"
                await wait_for(lambda: pool.fetchval(
                    "SELECT count(*) FROM outbox WHERE workflow_id = $1 AND sent_at IS NOT NULL"
                    " AND kind IN ('summary', 'debit-note')", handle.id), 30, "mail delivered")
                await wait_for(lambda: pool.fetchval(
                    "SELECT count(*) = 2 FROM outbox WHERE workflow_id = $1 AND sent_at IS NOT NULL"
                    " AND kind IN ('summary', 'debit-note')", handle.id), 30, "both delivered")
                rows = await pool.fetch(
                    "SELECT kind, body, body_html FROM outbox WHERE workflow_id = $1", handle.id)
            messages = inbox(tmp_path / "mail")

    note = next(m for m in messages if "bidi@supplier.example" in str(m["To"]))
    summary = next(m for m in messages if "Reconciliation" in m["Subject"])
    bodies = [note.get_body(preferencelist=("plain",)).get_content(),
              summary.get_body(preferencelist=("plain",)).get_content(),
              summary.get_body(preferencelist=("html",)).get_content()]
    bodies += [r["body"] for r in rows] + [r["body_html"] for r in rows if r["body_html"]]
    for body in bodies:
        assert not any(c in body for c in RAW), body[:400]
    assert f"BIDI-{tag}-\\u202e1gpj.exe\\x1b[2J\\x07" in bodies[0]
    assert "Evil \\u202eTraders\\x1b[31m" in bodies[0]
    assert "Evil \\u202eTraders\\x1b[31m" in bodies[2], bodies[2]
