"""Kills and outages during a mailbox's fetch, with real worker processes, a real Dovecot and nights
through Temporal: a worker killed between reading a message and recording it (on the first page,
and in the middle of the second) leaves every message imported exactly once and the night equal
to a crash-free control night's; a 60 s outage of the mail server mid-fetch is ridden out; a
wrong password hands over at once in the server's words, nothing taken."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import asyncpg
from temporalio.client import Client

from recon.runtime.dev_mailbox import example_mails
from recon.sources.report import night_lines
from recon.store import sources
from tests.fakes.dovecot import deliver, flags
from tests.fakes.tcp_proxy import TcpProxy
from tests.helpers import first_handover, recon_cli, settings_for, start, wait_for
from tests.system.test_inbox import _message
from tests.system.test_load_cli import fresh_database
from tests.system.test_sources import _folders

NOTES = 57  # with the 3 example invoices, two pages of the fetch (IMAP_BATCH = 50)


def _mail(tag: str) -> list:
    return example_mails() + [_message("someone@else.example", f"<note-{n}-{tag}@x>",
                                       body="Our new catalogue.") for n in range(NOTES)]


async def _night(stack, client: Client, spawn_worker, tmp_path: Path, name: str, url: str,
                 password: str, certificate: Path, wh: str, day: str, queue: str,
                 failpoint: str | None, *options: str, after_kill=None) -> dict:
    """One night of the examples in a database of its own, the mail read from `url`; killed once
    at `failpoint` when given, a successor finishing it. What it left, to compare."""
    (tmp_path / name).mkdir()
    exports, _drop = _folders(tmp_path / name, wh)
    async with fresh_database(stack.database_url, f"{name}_{os.getpid()}_{wh}") as (db, pool):
        env = stack.env(DATABASE_URL=db, RECON_TASK_QUEUE=queue, AP_PASSWORD=password,
                        SSL_CERT_FILE=str(certificate))
        for args in (("source", "add", wh, f"erp:{exports}", "--date-format", "DD-MM-YYYY",
                      "--amount-format", "indian"),
                     ("source", "add", wh, url, "--password-env", "AP_PASSWORD", *options)):
            added = await asyncio.to_thread(recon_cli, env, *args)
            assert added.returncode == 0, added.stderr
        worker_env = {"DATABASE_URL": db, "AP_PASSWORD": password, "SSL_CERT_FILE": str(certificate)}
        handle = await start(client, settings_for(queue), day, wh)
        if failpoint:
            doomed = spawn_worker(queue, RECON_FAILPOINTS=failpoint, **worker_env)
            assert await doomed.wait_exit(180) == 137, doomed.output()[-2000:]
            if after_kill is not None:
                await after_kill(pool)
        spawn_worker(queue, **worker_env)
        assert (await asyncio.wait_for(handle.result(), 300)).status == "Completed"
        status = "\n".join(await night_lines(pool, handle.id))
        return {**await _left(pool), "status_moved": status.count("(moved to recon-unreadable)")}


async def _left(pool: asyncpg.Pool) -> dict:
    return {
        "ledger": [tuple(r) for r in await pool.fetch(
            "SELECT invoice_no, kind, amount_paise FROM ledger_entries ORDER BY invoice_no, kind")],
        "invoices": [tuple(r) for r in await pool.fetch(
            "SELECT invoice_no, count(*) FROM invoices GROUP BY invoice_no ORDER BY invoice_no")],
        "mail_messages": await pool.fetchval("SELECT count(*) FROM mail_messages"),
        "mail_messages_distinct": await pool.fetchval("SELECT count(DISTINCT message_id) FROM mail_messages"),
        "items": [tuple(r) for r in await pool.fetch(
            "SELECT outcome, count(*), count(DISTINCT (uidvalidity, uid)) FROM source_items"
            " WHERE uid IS NOT NULL GROUP BY outcome ORDER BY outcome")],
        "moved": await pool.fetchval("SELECT count(*) FROM source_items WHERE moved_to IS NOT NULL"),
    }


async def test_a_worker_killed_between_reading_and_recording_leaves_each_message_once(
        stack, client: Client, night, tmp_path: Path, spawn_worker, imap_server, imap_account) -> None:
    day, wh, queue = night
    await deliver(imap_account, _mail(wh))
    args = (imap_account.url(), imap_account.password, imap_server.certificate)
    control = await _night(stack, client, spawn_worker, tmp_path, "control", *args, f"{wh}c", day,
                           f"{queue}c", None)
    assert control["invoices"] == [("KA-3001", 1), ("MS-0042", 1), ("SFP-7001", 1)]
    assert control["items"] == [("filed", NOTES, NOTES), ("imported", 3, 3)]
    assert control["mail_messages"] == control["mail_messages_distinct"] == NOTES + 3
    # Items 1-3 are the ERP's files; item 5 is the second message (first page), item 58 the 55th
    # (in the middle of the second page): read, not yet recorded, when the worker dies.
    for n, point in enumerate(("fetch_sources:5:first", "fetch_sources:58:first")):
        crashed = await _night(stack, client, spawn_worker, tmp_path, f"killed{n}", *args,
                               f"{wh}k{n}", day, f"{queue}k{n}", point)
        assert crashed == control, point


async def test_filed_mail_is_moved_only_after_its_import_commits_and_a_kill_between_loses_nothing(
        stack, client: Client, night, tmp_path: Path, spawn_worker, imap_server, imap_account) -> None:
    day, wh, queue = night
    await deliver(imap_account, _mail(wh))

    async def killed_before_the_move(pool: asyncpg.Pool) -> None:
        # The first page's 50 messages are committed (47 filed), and none moved yet.
        assert await pool.fetchval("SELECT count(*) FROM source_items WHERE uid IS NOT NULL") == 50
        assert await pool.fetchval("SELECT count(*) FROM source_items WHERE moved_to IS NOT NULL") == 0
        assert len(await flags(imap_account)) == NOTES + 3

    left = await _night(stack, client, spawn_worker, tmp_path, "moved", imap_account.url(),
                        imap_account.password, imap_server.certificate, wh, day, queue,
                        "move_filed:1:first", "--file-to", "recon-unreadable",
                        after_kill=killed_before_the_move)
    assert left["invoices"] == [("KA-3001", 1), ("MS-0042", 1), ("SFP-7001", 1)]
    assert left["items"] == [("filed", NOTES, NOTES), ("imported", 3, 3)]
    assert left["ledger"] == [("S103:MS-0042", "price", 60_000)]
    assert left["moved"] == NOTES
    assert left["status_moved"] == 20, "recon status says where each filed message went (20 shown)"
    assert len(await flags(imap_account, "recon-unreadable")) == NOTES, "every filed message moved"
    inbox = await flags(imap_account)
    assert len(inbox) == 3 and all("\\Seen" not in f for f in inbox.values()), "the invoices stay, unread"


async def test_a_minute_long_mail_outage_mid_fetch_is_ridden_out(
        pool: asyncpg.Pool, client: Client, night, tmp_path: Path, spawn_worker, imap_server,
        imap_account) -> None:
    day, wh, queue = night
    many = [_message("someone@else.example", f"<out-{n}-{wh}@x>", body="Catalogue") for n in range(400)]
    await deliver(imap_account, many)
    proxy = TcpProxy("127.0.0.1", imap_account.plain_port)
    await proxy.start()
    url = f"imap://{imap_account.user}@127.0.0.1:{proxy.port}/INBOX"
    env = {"AP_PASSWORD": imap_account.password, "SSL_CERT_FILE": str(imap_server.certificate)}
    await sources.add(pool, wh, "imap", url, {}, "env:AP_PASSWORD")
    worker = spawn_worker(queue, RECON_OUTAGE_WINDOW="300", **env)
    handle = await start(client, settings_for(queue), day, wh)

    async def fetching() -> bool:
        return await _taken(pool, handle.id) > 0
    await wait_for(fetching, 120, "the fetch to begin taking mail", every=0.02)
    await proxy.cut()  # the mail server is gone for a minute
    await asyncio.sleep(15)  # the page read before the cut is recorded; nothing after it
    cut_at = await _taken(pool, handle.id)
    assert cut_at < len(many) and cut_at % 50 == 0, cut_at
    await asyncio.sleep(45)
    assert await _taken(pool, handle.id) == cut_at, "nothing taken while it was gone"

    async def refused_once() -> bool:
        return "unreachable" in worker.output()
    assert await refused_once(), worker.output()[-3000:]
    await proxy.heal()
    assert (await asyncio.wait_for(handle.result(), 300)).status == "Completed"
    assert await _taken(pool, handle.id) == len(many)
    assert await pool.fetchval("SELECT count(*) FROM handovers WHERE workflow_id = $1", handle.id) == 0


async def _taken(pool: asyncpg.Pool, workflow_id: str) -> int:
    return await pool.fetchval("SELECT count(*) FROM source_items WHERE workflow_id = $1", workflow_id)


async def test_a_wrong_password_hands_over_at_once_in_the_servers_words(
        pool: asyncpg.Pool, client: Client, night, spawn_worker, imap_server, imap_account) -> None:
    day, wh, queue = night
    await deliver(imap_account, _mail(wh)[:3])
    env = {"AP_PASSWORD": "not-the-password", "SSL_CERT_FILE": str(imap_server.certificate)}
    await sources.add(pool, wh, "imap", imap_account.url(), {}, "env:AP_PASSWORD")
    spawn_worker(queue, RECON_OUTAGE_WINDOW="300", **env)
    handle = await start(client, settings_for(queue), day, wh)
    note = await first_handover(pool, handle.id, timeout=90)
    assert (note["step"], note["error_type"], note["attempts"]) == ("fetch_sources", "SourceRefused", 1)
    assert "AUTHENTICATIONFAILED" in note["error_message"], note["error_message"]
    assert "not-the-password" not in note["error_message"]
    assert await pool.fetchval("SELECT count(*) FROM source_items WHERE workflow_id = $1", handle.id) == 0
    await handle.terminate("the test has seen the handover")
