"""The unattended night (issue 45's acceptance): the sources are configured once with the CLI (a
mailbox on a real Dovecot, a drop folder, an ERP export folder); during the day mail lands in the
mailbox and files in the folders; then only a Temporal schedule acts. The scheduled night fetches,
loads, reconciles, posts, and mails its debit note and its summary to a loopback SMTP server, and
`recon status RUN` says what came from each source. Skipped where Dovecot is missing."""

from __future__ import annotations

import asyncio
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.client import Client

from recon.domain.money import rupees
from recon.domain.schedules import business_date_of
from recon.mail.smtp_sink import MailSink
from tests.fakes import dovecot
from tests.fakes.smtp import inbox, text_of
from tests.helpers import ROOT, recon_cli, wait_for
from tests.system.test_load_cli import fresh_database
from tests.system.test_sources import _tally

EXAMPLES = ROOT / "examples"
MAIL_FROM = "accounts@distributor.example"
FINANCE_HEAD = "finance.head@distributor.example"


async def _cli(env: dict[str, str], *args: str):
    return await asyncio.to_thread(recon_cli, env, *args, timeout=120)


def _the_day(tmp_path: Path, warehouse: str) -> tuple[Path, Path]:
    """What the ERP exported and suppliers dropped during the day (settled long before night)."""
    exports, drop = tmp_path / "erp-exports", tmp_path / "drop"
    exports.mkdir()
    drop.mkdir()
    for name in ("suppliers.csv", "orders.csv", "receipts.csv"):
        (exports / name).write_text(_tally((EXAMPLES / "master-data" / name).read_text(), warehouse))
    for name in ("KA-3001.txt", "SFP-7001.txt"):
        shutil.copy(EXAMPLES / "invoices" / name, drop / name)
    old = os.path.getmtime(drop) - 60
    for path in (*exports.iterdir(), *drop.iterdir()):
        os.utime(path, (old, old))
    return exports, drop


async def test_only_a_schedule_acts_and_the_night_fetches_posts_and_mails(
        stack, client: Client, night, tmp_path: Path, spawn_worker, imap_account) -> None:
    _day, wh, queue = night
    exports, drop = _the_day(tmp_path, wh)
    # The price-mismatched invoice comes by mail, with a note that is no invoice beside it.
    await dovecot.deliver(imap_account, [
        dovecot.invoice_mail("MS-0042", attachment=(EXAMPLES / "invoices" / "MS-0042.txt").read_bytes(),
                             filename="MS-0042.txt", subtype="plain"),
        dovecot.invoice_mail("none", attachment=b"thank you for your order\n", filename="hello.txt",
                             subtype="plain"),
    ])
    maildir = tmp_path / "sent"
    async with fresh_database(stack.database_url, f"unattended_{os.getpid()}_{wh}") as (url, pool):
        with MailSink(maildir) as sink:
            env = stack.env(DATABASE_URL=url, RECON_TASK_QUEUE=queue, SMTP_URL=sink.url,
                            RECON_MAIL_FROM=MAIL_FROM, RECON_FINANCE_HEAD=FINANCE_HEAD,
                            AP_PASSWORD=imap_account.password,
                            SSL_CERT_FILE=os.environ["SSL_CERT_FILE"])
            # Configured once, by a person, with the CLI.
            added = [await _cli(env, "source", "add", wh, f"erp:{exports}", "--date-format",
                                "DD-MM-YYYY", "--amount-format", "indian"),
                     await _cli(env, "source", "add", wh, f"folder:{drop}"),
                     await _cli(env, "source", "add", wh, imap_account.url(),
                                "--password-env", "AP_PASSWORD")]
            assert all(a.returncode == 0 for a in added), [a.stderr for a in added]
            erp_id, folder_id, mail_id = (a.stdout.split()[1] for a in added)
            made = await _cli(env, "schedule", "create", "--warehouse", wh, "--at", "02:00",
                              "--tz", "Asia/Kolkata")
            assert made.returncode == 0, made.stderr
            assert await pool.fetchval("SELECT count(*) FROM invoices") == 0, "nothing imported by hand"

            # From here on nobody types a command that touches the night: a worker serves the
            # queue, and the schedule fires (a trigger is the firing at 02:00, brought forward).
            spawn_worker(queue, DATABASE_URL=url, SMTP_URL=sink.url, RECON_MAIL_FROM=MAIL_FROM,
                         RECON_FINANCE_HEAD=FINANCE_HEAD, AP_PASSWORD=imap_account.password,
                         SSL_CERT_FILE=os.environ["SSL_CERT_FILE"])
            before = business_date_of(datetime.now(UTC), "Asia/Kolkata", 1)
            fired = await _cli(env, "schedule", "trigger", "--warehouse", wh)
            assert fired.returncode == 0, fired.stderr
            ids = {f"recon-{d}-{wh}" for d in (before, before + timedelta(days=1))}

            async def the_night() -> list:
                return [w async for w in client.list_workflows(f"ReconWarehouse = '{wh}'")]
            (run,) = await wait_for(the_night, 60, "the schedule to start the night")
            assert run.id in ids, run.id
            day = run.id.removeprefix("recon-").removesuffix(f"-{wh}")
            summary = await asyncio.wait_for(client.get_workflow_handle(run.id).result(), 240)
            assert summary["status"] == "Completed", summary
            await wait_for(lambda: pool.fetchval(
                "SELECT count(*) = 0 FROM outbox WHERE workflow_id = $1 AND sent_at IS NULL", run.id),
                60, "every mail of the night to be delivered")
            status = await _cli(env, "status", run.id)
        assert (await _cli(env, "schedule", "delete", "--warehouse", wh)).returncode == 0

        ledger = await pool.fetch("SELECT invoice_no, kind, amount_paise FROM ledger_entries"
                                  " WHERE workflow_id = $1", run.id)
        assert [tuple(r) for r in ledger] == [("S103:MS-0042", "price", 60_000)]
        invoices = await pool.fetch("SELECT invoice_no, business_date::text AS day FROM invoices"
                                    " ORDER BY invoice_no")
        assert [tuple(r) for r in invoices] == [("KA-3001", day), ("MS-0042", day), ("SFP-7001", day)]
        items = await pool.fetch("SELECT source_id::text AS source, outcome, count(*) AS n"
                                 " FROM source_items WHERE workflow_id = $1 GROUP BY 1, 2", run.id)
        assert {(r["source"], r["outcome"], r["n"]) for r in items} == {
            (erp_id, "loaded", 3), (folder_id, "imported", 2), (mail_id, "imported", 1),
            (mail_id, "filed", 1)}
        assert await pool.fetchval("SELECT count(*) FROM purchase_orders") > 0

        outbox = await pool.fetch("SELECT key, kind, recipient FROM outbox WHERE workflow_id = $1",
                                  run.id)
        assert sorted(r["kind"] for r in outbox) == ["debit-note", "summary"]
        sent = [m for m in inbox(maildir) if m["Idempotency-Key"].startswith(f"{run.id}:")]
        assert sorted(m["Idempotency-Key"] for m in sent) == sorted(r["key"] for r in outbox), \
            "each mail of the night delivered once"
        note = next(m for m in sent if m["Idempotency-Key"] == next(
            r["key"] for r in outbox if r["kind"] == "debit-note"))
        assert "MS-0042" in text_of(note) and f"Total of this debit note: {rupees(60_000)}" in text_of(note)
        summary_mail = next(m for m in sent if m["Idempotency-Key"] == f"{run.id}:summary")
        assert summary_mail["To"] == FINANCE_HEAD

        assert status.returncode == 0, status.stderr
        assert f"from source {folder_id} (folder:{drop}): 2 imported (2 documents), 0 filed" \
            in status.stdout, status.stdout
        assert f"from source {erp_id} (erp:{exports}): 3 file(s) loaded, 0 filed" in status.stdout
        assert f"from source {mail_id} (" in status.stdout and \
            "1 imported (1 documents), 1 filed" in status.stdout, status.stdout
        assert all("\\Seen" not in f for f in (await dovecot.flags(imap_account)).values()), \
            "the mailbox is not changed"

