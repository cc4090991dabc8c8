"""The IMAP reader against a real Dovecot on loopback: new mail above the mark, once, in UID order;
the mailbox left as it was; renumbered UIDs read again; the night's bound; oversized mail named
without being downloaded; a wrong password refused and a stopped server unreachable, each in one
line."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from pathlib import Path

import aioimaplib
import pytest

from recon.domain.errors import SourceRefused, SourceUnreachable, classify, outage_in_words
from recon.runtime.imap_server import Account, DovecotServer
from recon.sources.imap import ImapRead, move_to, probe, read_new
from tests.fakes.dovecot import deliver, flags, invoice_mail, scratch_root


async def test_new_messages_in_uid_order_and_never_twice(imap_account: Account) -> None:
    await deliver(imap_account, [invoice_mail(n) for n in range(1, 4)])
    first = await read_new(imap_account.url(), imap_account.password, uidvalidity=None, after_uid=0)
    assert [i.uid for i in first.items] == [1, 2, 3]
    assert [i.raw and b"Invoice %d" % n in i.raw for n, i in enumerate(first.items, 1)] == [True] * 3
    assert all(i.message_id and i.message_id.endswith(f".inv{n}@supplier.example>")
               for n, i in enumerate(first.items, 1))
    assert first.highest_uid == 3 and all(i.refused is None for i in first.items)

    again = await read_new(imap_account.url(), imap_account.password,
                           uidvalidity=first.uidvalidity, after_uid=first.highest_uid)
    # `UID SEARCH UID 4:*` matches the last message (UID 3) too: it must not come back.
    assert again == ImapRead(first.uidvalidity, 3, [])

    await deliver(imap_account, [invoice_mail(4), invoice_mail(5)])
    later = await read_new(imap_account.url(), imap_account.password,
                           uidvalidity=first.uidvalidity, after_uid=again.highest_uid, limit=1)
    assert [i.uid for i in later.items] == [4] and later.highest_uid == 4
    rest = await read_new(imap_account.url(), imap_account.password,
                          uidvalidity=first.uidvalidity, after_uid=later.highest_uid)
    assert [i.uid for i in rest.items] == [5]


async def test_reading_leaves_every_message_unseen(imap_account: Account) -> None:
    await deliver(imap_account, [invoice_mail(n) for n in range(1, 3)])
    before = await flags(imap_account)
    assert before and all("\\Seen" not in f for f in before.values())
    read = await read_new(imap_account.url(), imap_account.password, uidvalidity=None, after_uid=0)
    assert len(read.items) == 2 and all(i.raw for i in read.items)
    assert await flags(imap_account) == before
    assert "2 messages (2 unseen)" in await probe(imap_account.url(), imap_account.password)


async def test_changed_uidvalidity_reads_from_uid_one(imap_account: Account) -> None:
    url = imap_account.url("Bills")
    await deliver(imap_account, [invoice_mail(n) for n in range(1, 3)], folder="Bills")
    first = await read_new(url, imap_account.password, uidvalidity=None, after_uid=0)
    assert first.highest_uid == 2

    # The folder is deleted and made again, as a server migration does: the UIDs are renumbered.
    client = aioimaplib.IMAP4(host=imap_account.host, port=imap_account.plain_port, timeout=30)
    await client.wait_hello_from_server()
    await client.login(imap_account.user, imap_account.password)
    assert (await client.delete("Bills")).result == "OK"
    await client.logout()
    await deliver(imap_account, [invoice_mail(n) for n in range(1, 4)], folder="Bills")

    after = await read_new(url, imap_account.password, uidvalidity=first.uidvalidity,
                           after_uid=first.highest_uid, up_to_uid=first.highest_uid)
    assert after.uidvalidity != first.uidvalidity
    assert [i.uid for i in after.items] == [1, 2, 3]  # all of it again; the caller dedupes
    assert {i.uidvalidity for i in after.items} == {after.uidvalidity}


async def test_up_to_uid_bounds_the_night(imap_account: Account) -> None:
    await deliver(imap_account, [invoice_mail(n) for n in range(1, 6)])
    mark = await read_new(imap_account.url(), imap_account.password, uidvalidity=None, after_uid=0,
                          limit=2)
    assert [i.uid for i in mark.items] == [1, 2]
    # The night fixed its high-water mark at UID 3; UIDs 4 and 5 arrived later: the next night's.
    rest = await read_new(imap_account.url(), imap_account.password, uidvalidity=mark.uidvalidity,
                          after_uid=mark.highest_uid, up_to_uid=3)
    assert [i.uid for i in rest.items] == [3] and rest.highest_uid == 3
    done = await read_new(imap_account.url(), imap_account.password, uidvalidity=mark.uidvalidity,
                          after_uid=3, up_to_uid=3)
    assert done.items == [] and done.highest_uid == 3


async def test_oversized_message_is_refused_without_download(imap_account: Account) -> None:
    big = invoice_mail(2, attachment=b"%PDF-1.4\n" + b"0" * 300_000, filename="scan.pdf", subtype="pdf")
    await deliver(imap_account, [invoice_mail(1), big, invoice_mail(3)])
    read = await read_new(imap_account.url(), imap_account.password, uidvalidity=None, after_uid=0,
                          max_bytes=100_000)
    small1, large, small3 = read.items
    assert large.raw is None and large.size > 300_000 and large.message_id
    assert large.refused and "over the 100,000-byte limit" in large.refused and "\n" not in large.refused
    assert small1.raw and small3.raw and small1.refused is None and read.highest_uid == 3


async def test_wrong_password_is_refused_in_one_line(imap_account: Account) -> None:
    with pytest.raises(SourceRefused) as refused:
        await read_new(imap_account.url(), "not-the-password", uidvalidity=None, after_uid=0)
    line = str(refused.value)
    assert "\n" not in line and "AUTHENTICATIONFAILED" in line and imap_account.user in line
    assert "not-the-password" not in line
    assert classify(refused.value) == "unknown"  # permanent: handed over at once, never retried


async def test_missing_folder_and_untrusted_certificate_are_refused(
        imap_account: Account, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SourceRefused, match="Nope"):
        await probe(imap_account.url("Nope"), imap_account.password)
    monkeypatch.setenv("SSL_CERT_FILE", str(Path(tempfile.gettempdir()) / "no-such-ca.pem"))
    with pytest.raises(SourceRefused, match="certificate is not trusted"):
        await probe(imap_account.url(), imap_account.password)


async def test_plain_url_upgrades_with_starttls(imap_server: DovecotServer, imap_account: Account) -> None:
    await deliver(imap_account, [invoice_mail(1)])
    plain = imap_server.plain(imap_account)
    line = await probe(plain.url(), plain.password)
    assert line.startswith("imap://") and ", TLS; nothing changed" in line
    read = await read_new(plain.url(), plain.password, uidvalidity=None, after_uid=0)
    assert [i.uid for i in read.items] == [1]


async def test_stopped_server_is_unreachable() -> None:
    root = scratch_root()
    server = DovecotServer(root / "server")
    try:
        server.start()
        account = server.add_account()
        await deliver(account, [invoice_mail(1)])
        assert (await read_new(account.url(), account.password, uidvalidity=None, after_uid=0)).items
        server.stop()
        with pytest.raises(SourceUnreachable) as unreachable:
            await read_new(account.url(), account.password, uidvalidity=None, after_uid=0, timeout=10)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert str(unreachable.value).endswith("connection refused") and "\n" not in str(unreachable.value)
    assert classify(unreachable.value) == "temporary"
    assert outage_in_words(unreachable.value) == "mail server 127.0.0.1 unreachable"


async def test_move_to_after_commit(imap_account: Account) -> None:
    await deliver(imap_account, [invoice_mail(n) for n in range(1, 4)])
    read = await read_new(imap_account.url(), imap_account.password, uidvalidity=None, after_uid=0)
    assert await move_to(imap_account.url(), imap_account.password, read.uidvalidity, [2],
                         "recon-unreadable") == 1
    assert sorted(await flags(imap_account)) == [1, 3]
    moved = await read_new(imap_account.url("recon-unreadable"), imap_account.password,
                           uidvalidity=None, after_uid=0)
    assert [i.message_id for i in moved.items] == [read.items[1].message_id]
    # Renumbered since (another UIDVALIDITY): nothing is moved.
    assert await move_to(imap_account.url(), imap_account.password, read.uidvalidity + 1, [1],
                         "recon-unreadable") == 0


async def test_a_thousand_messages_in_pages(imap_account: Account) -> None:
    await deliver(imap_account, [invoice_mail(n, attachment=b"%PDF-1.4\n" + b"1" * 4000,
                                              filename=f"{n}.pdf", subtype="pdf")
                                 for n in range(1, 1001)])
    uids: list[int] = []
    mark, validity = 0, None
    while True:
        read = await read_new(imap_account.url(), imap_account.password, uidvalidity=validity,
                              after_uid=mark, limit=500)
        if not read.items:
            break
        uids += [i.uid for i in read.items]
        mark, validity = read.highest_uid, read.uidvalidity
    assert uids == list(range(1, 1001))


class _CuttingProxy:
    """Loopback TCP between the reader and Dovecot that, once the server has sent `after` bytes,
    either drops both connections (a reset mid-answer) or goes silent (a hung server)."""

    def __init__(self, port: int, after: int, silent: bool = False) -> None:
        self.target, self.after, self.silent = port, after, silent
        self.port = 0
        self.closed = asyncio.Event()

    async def start(self) -> _CuttingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        sent = 0

        async def upstream() -> None:
            with contextlib.suppress(OSError):
                while data := await reader.read(65536):
                    up_writer.write(data)

        async def downstream() -> None:
            nonlocal sent
            with contextlib.suppress(OSError):
                while data := await up_reader.read(65536):
                    if sent >= self.after:
                        if self.silent:
                            await self.closed.wait()
                        break
                    writer.write(data)
                    sent += len(data)
            writer.close()
            up_writer.close()

        await asyncio.gather(upstream(), downstream(), return_exceptions=True)

    def close(self) -> None:
        self.closed.set()
        self._server.close()


@pytest.mark.parametrize("silent", [False, True], ids=["reset", "hung"])
async def test_server_lost_mid_fetch_is_unreachable(imap_account: Account, silent: bool) -> None:
    await deliver(imap_account, [invoice_mail(n, attachment=b"%PDF-1.4\n" + b"7" * 200_000,
                                              filename="scan.pdf", subtype="pdf") for n in range(1, 6)])
    proxy = await _CuttingProxy(imap_account.plain_port, after=300_000, silent=silent).start()
    url = f"imap://{imap_account.user}@127.0.0.1:{proxy.port}/INBOX"
    started = time.monotonic()
    try:
        with pytest.raises(SourceUnreachable) as lost:
            await read_new(url, imap_account.password, uidvalidity=None, after_uid=0, timeout=3)
    finally:
        proxy.close()
    line = str(lost.value)
    assert "\n" not in line and "UID FETCH (bodies)" in line
    assert ("no answer" in line) if silent else ("closed the connection" in line)
    assert time.monotonic() - started < 60  # not left waiting for ever
