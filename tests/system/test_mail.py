"""The outbox delivered over SMTP, against a real SMTP server on loopback (aiosmtpd): once per row
when all is well, again (same Message-ID) only inside the measured crash window, retried on 4xx
and absent servers, parked with a handover on 5xx."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import asyncpg
from temporalio.client import Client

from recon.domain.keys import debit_note_key, invoice_label, number_of
from recon.domain.money import rupees
from recon.mail.documents import claim_number
from recon.mail.envelope import message_id
from recon.mail.sender import Sender, SenderConfig
from recon.mail.smtp_sink import MailSink
from recon.mail.smtp_url import parse_smtp_url
from recon.runtime.embedded import free_port
from recon.store.outbox import Message, enqueue
from recon.tools.seed import seed_night
from tests import approvers
from tests.fakes.smtp import ScriptedHandler, inbox, mail_database, text_of
from tests.helpers import ROOT, inprocess_worker, recon_cli, settings_for, start, wait_for

FINANCE_HEAD = "finance.head@distributor.example"
MAIL_FROM = "accounts@distributor.example"
DOMAIN = "distributor.example"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextlib.asynccontextmanager
async def running_sender(database_url: str, smtp_url: str, **config) -> AsyncIterator[Sender]:
    sender = Sender(database_url, SenderConfig(
        target=parse_smtp_url(smtp_url), mail_from=MAIL_FROM, finance_head_email=FINANCE_HEAD,
        **{"lanes": 2, "retry_seconds": 0.2, "poll_seconds": 5.0, **config}))
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(sender.run(stop, ready))
    await asyncio.wait_for(ready.wait(), 10)
    try:
        yield sender
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)


async def _queue(pool: asyncpg.Pool, workflow_id: str, n: int, kind: str = "handover") -> list[str]:
    """n messages in one statement (one NOTIFY), as a big night's outbox would hold them."""
    keys = [f"{workflow_id}:msg:{i:05d}" for i in range(n)]
    await pool.execute(
        "INSERT INTO outbox (key, workflow_id, kind, recipient, subject, body)"
        " SELECT k, $2, $3, $4, 'Message ' || k, 'Body of ' || k FROM unnest($1::text[]) AS k",
        keys, workflow_id, kind, FINANCE_HEAD)
    return keys


async def _sent(pool: asyncpg.Pool) -> int:
    return await pool.fetchval("SELECT count(*) FROM outbox WHERE sent_at IS NOT NULL")


def _spawn_sender(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "recon.cli", "sender", *args], cwd=ROOT,
                            env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


# ------------------------------------------------------------------------------------ a night
async def test_a_seeded_night_delivers_each_note_once_the_summary_and_a_handover_note(
    client: Client, night, stack, tmp_path: Path
) -> None:
    day, warehouse, queue = night
    held_warehouse = f"{warehouse}h"
    maildir = tmp_path / "mail"
    async with mail_database(stack.database_url) as (url, pool):
        await seed_night(pool, day, warehouse, invoices=60, mismatches=8, seed=5)
        await seed_night(pool, day, held_warehouse, invoices=60, mismatches=8, seed=6)
        with MailSink(maildir) as sink:
            settings = settings_for(queue, database_url=url, smtp_url=sink.url,
                                    mail_from=MAIL_FROM, finance_head_email=FINANCE_HEAD,
                                    mail_poll_seconds=5.0)
            # The gate is the worker's policy: the held night runs on a worker whose gate holds.
            strict = replace(settings, task_queue=f"{queue}-strict", gate_max_total_paise=100)
            async with inprocess_worker(settings), inprocess_worker(strict):  # both send mail
                handle = await start(client, settings, day, warehouse)
                summary = await asyncio.wait_for(handle.result(), 90)
                held = await start(client, strict, day, held_warehouse)
                await wait_for(lambda: pool.fetchval(
                    "SELECT count(*) FROM outbox WHERE workflow_id = $1 AND kind = 'handover'"
                    " AND sent_at IS NOT NULL", held.id), 60, "the handover note to be delivered")
                await wait_for(lambda: pool.fetchval(
                    "SELECT count(*) = 0 FROM outbox WHERE workflow_id = $1 AND sent_at IS NULL",
                    handle.id), 30, "every message of the night to be delivered")
                listed = recon_cli(stack.env(DATABASE_URL=url), "mail", handle.id)
                status = recon_cli(stack.env(DATABASE_URL=url), "status", handle.id)
            await held.terminate("test over")

        wf = handle.id
        rows = await pool.fetch("SELECT * FROM outbox WHERE workflow_id = $1", wf)
        notes = [r for r in rows if r["kind"] == "debit-note"]
        assert summary.status == "Completed" and len(notes) == summary.debit_notes > 0
        assert {r["kind"] for r in rows} == {"debit-note", "summary"}

        messages = inbox(maildir)
        by_key = Counter(m["Idempotency-Key"] for m in messages)
        assert all(by_key[r["key"]] == 1 for r in rows), "one message per outbox row, no repeat"
        ours = [m for m in messages if m["Idempotency-Key"].startswith(f"{wf}:")]
        assert len(ours) == len(notes) + 1

        for note in notes:
            mail = next(m for m in ours if m["Idempotency-Key"] == note["key"])
            body = text_of(mail)
            assert mail["Message-ID"] == message_id(note["key"], DOMAIN) == note["message_id"]
            assert mail["To"] == note["recipient"]
            assert claim_number(note["key"]) in body and claim_number(note["key"]) in mail["Subject"]
            assert f"Total of this debit note: {rupees(note['amount_paise'])}" in body
            assert wf not in body and wf not in mail["Subject"], "no run id where a claim serves"
            invoices = await pool.fetch(
                "SELECT DISTINCT invoice_no FROM mismatches WHERE workflow_id = $1"
                " AND supplier_id = $2", wf, note["supplier_id"])
            # the supplier's own numbers, never our references (`S001:INV-…`)
            assert all(number_of(i["invoice_no"]) in body and i["invoice_no"] not in body
                       for i in invoices)

        summary_mail = next(m for m in ours if m["Idempotency-Key"] == f"{wf}:summary")
        assert summary_mail.get_body(preferencelist=("html",)) is not None
        html = summary_mail.get_body(preferencelist=("html",)).get_content()
        text = text_of(summary_mail)
        assert f"Debit notes: {len(notes)} delivered, 0 pending, 0 failed" in text
        assert "<table" in html and rupees(summary.adjustment_total_paise) in html
        parked = await pool.fetch("SELECT invoice_no FROM parked_items WHERE workflow_id = $1", wf)
        assert all(invoice_label(p["invoice_no"]) in text for p in parked), "INV-… (S0..)"

        handover_mail = [m for m in messages if m["Idempotency-Key"].startswith(f"{held.id}:")]
        assert len(handover_mail) == 1 and handover_mail[0]["To"] == FINANCE_HEAD
        assert "gate_before_debit_notes" in text_of(handover_mail[0])

        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.count("delivered") >= len(notes) + 1
        assert status.returncode == 0, status.stderr
        assert f"debit notes: {len(notes)} delivered, 0 pending, 0 failed" in status.stdout


# ------------------------------------------------------------------------------------ at once
async def test_two_senders_at_once_deliver_a_thousand_messages_each_once(
    stack, tmp_path: Path
) -> None:
    maildir = tmp_path / "mail"
    async with mail_database(stack.database_url) as (url, pool):
        with MailSink(maildir) as sink:
            env = stack.env(DATABASE_URL=url, SMTP_URL=sink.url, RECON_SENDER_LANES="4",
                            RECON_MAIL_FROM=MAIL_FROM)
            logs = [tmp_path / f"sender-{n}.log" for n in (1, 2)]
            senders = [_spawn_sender(env, log) for log in logs]
            try:
                await wait_for(lambda: asyncio.sleep(0, all(
                    "sender started" in log.read_text(errors="replace") for log in logs)),
                    30, "both senders to start")
                keys = await _queue(pool, "recon-2026-10-13-bulk", 1000)
                await wait_for(lambda: asyncio.sleep(0, sink.handler.accepted >= 1000), 120,
                               "1,000 messages to arrive", every=0.2)
                await wait_for(lambda: pool.fetchval(
                    "SELECT count(*) = 1000 FROM outbox WHERE sent_at IS NOT NULL"), 10, "marks")
                await asyncio.sleep(0.5)  # time for a stray repeat to arrive, if there were one
            finally:
                for process in senders:
                    _stop(process)
        messages = inbox(maildir)
        ids = Counter(m["Message-ID"] for m in messages)
        assert len(messages) == 1000 and len(ids) == 1000, "each message exactly once"
        assert set(ids) == {message_id(k, DOMAIN) for k in keys}
        assert await _sent(pool) == 1000
        shares = [int(re.findall(r"\bsent\W{1,3}(\d+)", ANSI.sub("", log.read_text()))[-1]) for log in logs]
        assert sum(shares) == 1000 and all(s > 0 for s in shares), f"both delivered: {shares}"


# ------------------------------------------------------------------------------------ the window
async def test_a_sender_killed_after_the_server_accepted_repeats_that_message_only(
    stack, tmp_path: Path
) -> None:
    maildir = tmp_path / "mail"
    async with mail_database(stack.database_url) as (url, pool):
        keys = await _queue(pool, "recon-2026-10-13-kill", 20)
        with MailSink(maildir) as sink:
            env = stack.env(DATABASE_URL=url, SMTP_URL=sink.url, RECON_MAIL_FROM=MAIL_FROM)
            doomed = _spawn_sender({**env, "RECON_FAILPOINTS": "sender_accepted:5:kill"},
                                   tmp_path / "doomed.log", "--lanes", "1")
            try:
                code = await asyncio.wait_for(asyncio.to_thread(doomed.wait), 60)
            finally:
                _stop(doomed)
            assert code == -signal.SIGKILL, (tmp_path / "doomed.log").read_text()
            before = inbox(maildir)
            sent_keys = {r["key"] for r in await pool.fetch(
                "SELECT key FROM outbox WHERE sent_at IS NOT NULL")}
            in_window = {m["Idempotency-Key"] for m in before} - sent_keys
            # The honest window: 5 accepted by the server, 4 marked; the 5th is the one repeat.
            assert len(before) == 5 and len(sent_keys) == 4 and len(in_window) == 1
            (window_key,) = in_window
            assert await pool.fetchval("SELECT sent_at FROM outbox WHERE key = $1", window_key) is None

            again = _spawn_sender(env, tmp_path / "again.log")
            try:
                await wait_for(lambda: asyncio.sleep(0, sink.handler.accepted >= 21), 60,
                               "the rest to arrive", every=0.1)
                await wait_for(lambda: pool.fetchval(
                    "SELECT count(*) = 20 FROM outbox WHERE sent_at IS NOT NULL"), 10, "marks")
            finally:
                _stop(again)
        messages = inbox(maildir)
        ids = Counter(m["Message-ID"] for m in messages)
        assert len(messages) == 21 and set(ids) == {message_id(k, DOMAIN) for k in keys}
        assert [i for i, n in ids.items() if n > 1] == [message_id(window_key, DOMAIN)]
        copies = [m for m in messages if m["Idempotency-Key"] == window_key]
        assert copies[0].as_bytes() == copies[1].as_bytes(), "the repeat is the same message"


# ------------------------------------------------------------------------------------ errors
async def test_an_absent_then_busy_server_is_retried_with_growing_waits(
    stack, tmp_path: Path
) -> None:
    port = free_port()
    async with mail_database(stack.database_url) as (url, pool):
        async with running_sender(url, f"smtp://127.0.0.1:{port}", lanes=1, retry_seconds=0.2):
            (key,) = await _queue(pool, "recon-2026-10-13-busy", 1)
            row = await wait_for(lambda: pool.fetchrow(
                "SELECT * FROM outbox WHERE key = $1 AND attempts >= 1", key), 10, "a first try")
            assert row["sent_at"] is None and row["failed_at"] is None
            assert "Connect" in row["last_error"] or "refused" in row["last_error"].lower()
            handler = ScriptedHandler(tmp_path / "mail", busy_first=2)
            with MailSink(tmp_path / "mail", handler, port=port):
                row = await wait_for(lambda: pool.fetchrow(
                    "SELECT * FROM outbox WHERE key = $1 AND sent_at IS NOT NULL", key), 30,
                    "the message to get through")
        connection_failures = row["attempts"] - 3
        assert connection_failures >= 1 and row["last_error"] is None and row["failed_at"] is None
        assert len(handler.attempts) == 3 and len(inbox(tmp_path / "mail")) == 1
        first_gap = handler.attempts[1] - handler.attempts[0]
        second_gap = handler.attempts[2] - handler.attempts[1]
        floor = 0.2 * 2 ** connection_failures
        assert first_gap >= floor * 0.95 and second_gap >= 2 * floor * 0.95
        assert second_gap > first_gap, "the waits grow"


async def test_a_refused_debit_note_parks_with_the_reply_and_opens_a_handover(
    stack, tmp_path: Path
) -> None:
    maildir = tmp_path / "mail"
    gone, moved = "accounts@gone.example", "accounts@moved.example"
    wf = "recon-2026-10-13-refused"
    key = debit_note_key(wf, "S007")
    async with mail_database(stack.database_url) as (url, pool):
        await approvers.register(pool, stack.state)  # resend and dismiss are signed, as asha
        env_db = stack.env(DATABASE_URL=url)
        with MailSink(maildir, ScriptedHandler(maildir, refuse={gone})) as sink:
            async with running_sender(url, sink.url):
                async with pool.acquire() as conn:
                    await enqueue(conn, Message(
                        key=key, workflow_id=wf, kind="debit-note", recipient=gone,
                        subject=f"Debit note {claim_number(key)}", body="claim", supplier_id="S007",
                        amount_paise=271_500_00))
                row = await wait_for(lambda: pool.fetchrow(
                    "SELECT * FROM outbox WHERE key = $1 AND failed_at IS NOT NULL", key), 10,
                    "the note to be refused")
                assert row["sent_at"] is None and row["attempts"] == 1
                assert row["last_error"].startswith("550") and gone in row["last_error"]
                opened = await pool.fetchrow("SELECT * FROM mail_handovers WHERE outbox_key = $1", key)
                assert opened["workflow_id"] == wf and opened["decision"] is None
                note = await wait_for(lambda: pool.fetchrow(
                    "SELECT * FROM outbox WHERE kind = 'handover' AND workflow_id = $1"
                    " AND sent_at IS NOT NULL", wf), 10, "the handover note to be delivered")
                assert note["recipient"] == FINANCE_HEAD and "550" in note["body"]

                listed = recon_cli(env_db, "handovers")
                shown = recon_cli(env_db, "handover", wf)
                mails = recon_cli(env_db, "mail", wf)
                refused_again = recon_cli(env_db, "mail", "resend", key, "--by", "asha",
                                          "--to", "not-an-address")
                resent = recon_cli(env_db, "mail", "resend", key, "--by", "asha", "--to", moved)
                assert resent.returncode == 0, resent.stderr
                row = await wait_for(lambda: pool.fetchrow(
                    "SELECT * FROM outbox WHERE key = $1 AND sent_at IS NOT NULL", key), 10,
                    "the corrected note to be delivered")
                twice = recon_cli(env_db, "mail", "resend", key, "--by", "asha")
                shown_one = recon_cli(env_db, "mail", "show", key)
        assert listed.returncode == 0 and wf in listed.stdout and "mail" in listed.stdout
        assert shown.returncode == 0 and "550" in shown.stdout and "waiting" in shown.stdout
        assert mails.returncode == 0 and "failed" in mails.stdout
        assert "0 delivered, 0 pending, 1 failed" in mails.stdout
        assert refused_again.returncode != 0 and "--to" in refused_again.stderr
        assert twice.returncode != 0 and "not refused" in twice.stderr
        assert shown_one.returncode == 0 and "State: delivered after 2 attempts" in shown_one.stdout
        delivered = [m for m in inbox(maildir) if m["Idempotency-Key"] == key]
        assert len(delivered) == 1 and delivered[0]["To"] == moved
        assert delivered[0]["Message-ID"] == message_id(key, DOMAIN), "the same claim, same id"
        decided = await pool.fetchrow("SELECT * FROM mail_handovers WHERE outbox_key = $1", key)
        assert (decided["decision"], decided["decided_by"]) == ("resend", "asha")


async def test_mail_commands_refuse_bad_input_with_one_line(stack, pool) -> None:
    """(`pool` puts the test approvers on record: a dismiss is signed before it is looked up.)"""
    env = stack.env()
    for args, reason in [
        (("mail", "show"), "give the message's outbox key"),
        (("mail", "show", "no-such-key"), "no message"),
        (("mail", "bad id!"), "not a run id"),
        (("mail", "dismiss", "no-such-key", "--by", "asha", "--note", "phoned"), "no open"),
        (("sender",), "SMTP_URL is not set"),
    ]:
        result = recon_cli(env, *args)
        assert result.returncode != 0, args
        assert reason in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    bad_url = recon_cli({**env, "SMTP_URL": "http://example.com"}, "sender")
    assert bad_url.returncode != 0 and "SMTP_URL must start with" in bad_url.stderr


# ------------------------------------------------------------------------------------ documents
def test_a_withdrawal_cites_the_note_it_withdraws() -> None:
    from datetime import UTC, datetime

    from recon.mail.documents import render_withdrawal, withdrawal_number
    from recon.mail.envelope import build_email

    note = debit_note_key("recon-2026-10-13-ldh", "S042")
    whole, partial = f"undo:{note}", f"undo:{note}:refs-0a1b2c3d4e"
    assert claim_number(note) == "DN-20261013-LDH-S042"
    assert withdrawal_number(whole, note) == "WD-20261013-LDH-S042"
    assert withdrawal_number(partial, note).startswith("WD-20261013-LDH-S042-")
    document = render_withdrawal(
        withdrawal_key=partial, note_key=note, supplier_name="Konkan Cashews Pvt Ltd",
        note_total_paise=27_150_000, withdrawn_paise=1_234_550, note_was_sent=True)
    assert "DN-20261013-LDH-S042" in document.subject and "₹12,345.50" in document.subject
    assert "₹2,71,500" in document.text and "the rest of the claim stands" in document.text
    assert "recon-2026-10-13-ldh" not in document.text + document.subject
    assert "Reason: we reviewed some lines of this claim" in document.text  # never the undo's note
    mail = build_email({"key": partial, "reverses": note, "recipient": "a@konkan.example",
                        "subject": document.subject, "body": document.text, "body_html": None,
                        "created_at": datetime(2026, 10, 14, 3, 0, tzinfo=UTC)}, MAIL_FROM)
    assert mail["In-Reply-To"] == mail["References"] == message_id(note, DOMAIN)
    assert mail["Message-ID"] == message_id(partial, DOMAIN) != message_id(note, DOMAIN)


async def test_starttls_and_login_from_smtp_url(stack, tmp_path: Path) -> None:
    """A real deployment's path: STARTTLS (certificate verified against ?cafile=) then login."""
    import ssl

    from aiosmtpd.smtp import AuthResult

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    logins: list[tuple[bytes, bool]] = []

    def authenticate(server, session, envelope, mechanism, data) -> AuthResult:
        ok = (data.login, data.password) == (b"recon", b"s3cr3t@x")
        logins.append((data.login, ok))
        return AuthResult(success=ok, handled=False)

    maildir = tmp_path / "mail"
    async with mail_database(stack.database_url) as (url, pool):
        with MailSink(maildir, tls_context=context, require_starttls=True,
                      authenticator=authenticate, auth_require_tls=True) as sink:
            good = f"smtp+starttls://recon:s3cr3t%40x@127.0.0.1:{sink.port}?cafile={cert}"
            bad = f"smtp+starttls://recon:wrong@127.0.0.1:{sink.port}?cafile={cert}"
            async with running_sender(url, bad, lanes=1, retry_seconds=30):
                (key_,) = await _queue(pool, "recon-2026-10-13-tls", 1)
                row = await wait_for(lambda: pool.fetchrow(
                    "SELECT * FROM outbox WHERE key = $1 AND attempts >= 1", key_), 10, "a try")
            assert row["sent_at"] is None and row["failed_at"] is None, "a bad login: not parked"
            assert row["last_error"].startswith("535") and "SMTP_URL" in row["last_error"]
            await pool.execute("UPDATE outbox SET next_attempt_at = now() WHERE key = $1", key_)
            async with running_sender(url, good, lanes=1):
                row = await wait_for(lambda: pool.fetchrow(
                    "SELECT * FROM outbox WHERE key = $1 AND sent_at IS NOT NULL", key_), 10,
                    "delivery over TLS")
        results = [ok for _, ok in logins]  # aiosmtplib tries PLAIN, then LOGIN, with a bad one
        assert results[-1] and not any(results[:-1]) and len(inbox(maildir)) == 1
        assert parse_smtp_url(good).describe() == f"smtp+starttls://recon@127.0.0.1:{sink.port}"


async def test_an_idle_sender_is_woken_by_notify_not_by_its_poll(stack, tmp_path: Path) -> None:
    """A handover note reaches the inbox within a second although the poll is 30 s away."""
    import time

    maildir = tmp_path / "mail"
    async with mail_database(stack.database_url) as (url, pool):
        with MailSink(maildir) as sink:
            async with running_sender(url, sink.url, poll_seconds=30.0):
                await asyncio.sleep(0.5)  # every lane has found nothing and sleeps
                wf = "recon-2026-10-13-wake"
                queued = time.monotonic()
                async with pool.acquire() as conn:
                    await enqueue(conn, Message(
                        key=f"{wf}:handover:1", workflow_id=wf, kind="handover",
                        recipient=FINANCE_HEAD, subject="Decision needed", body="a note"))
                await wait_for(lambda: asyncio.sleep(0, sink.handler.accepted == 1), 1.0,
                               "the note within a second", every=0.01)
                took = time.monotonic() - queued
        assert took < 1.0 and len(inbox(maildir)) == 1
