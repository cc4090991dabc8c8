"""Reading a supplier mailbox over IMAP without changing it (RFC 3501/9051, through aioimaplib).

A message is named by (UIDVALIDITY, UID). The caller keeps a high-water mark per source: the
UIDVALIDITY it saw and the highest UID it took. `read_new` returns what lies above the mark, in
UID order, and the new mark; the night records it, so a message that arrives after the night's
fetch belongs to the next night. A changed UIDVALIDITY means the server renumbered the folder:
everything is read again from UID 1, and the caller's dedupe (Message-ID, content hash) keeps
each document once.

The mailbox is opened with EXAMINE (read-only) and bodies are fetched with `BODY.PEEK[]`, so no
flag is set, `\\Recent` stays and nothing is expunged: a person reading the same mailbox sees it
as it was. Sizes and Message-IDs come first, so a message over the size limit is named and
refused without downloading it. Only `move_to` changes the mailbox, and only when asked after the
import has committed.

Failures are one line each, with the server's words: `SourceRefused` (permanent: credentials,
folder, certificate, URL) or `SourceUnreachable` (temporary: refused, reset, timed out, TLS cut
short, UNAVAILABLE); both live in recon/domain/errors.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Iterable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import unquote, urlsplit

import aioimaplib
from aioimaplib import Command, Response

from recon.domain.errors import SourceRefused, SourceUnreachable
from recon.domain.printable import printable

T = TypeVar("T")

MAX_BYTES = 25 * 2**20
HEADER_BATCH = 100  # aioimaplib parses a response chunk recursively, a frame per line: keep it small
BODY_BATCH_BYTES = 8 * 2**20
BODY_BATCH_COUNT = 50
TEMPORARY_CODES = ("UNAVAILABLE", "INUSE", "LIMIT", "SERVERBUG")  # RFC 5530 codes worth a retry


@dataclass(frozen=True)
class MailItem:
    """One message above the mark. `raw` is None when it was not downloaded; `refused` then says
    why in one line, so the import can file it (with its reason) like an unreadable Maildir mail."""

    uidvalidity: int
    uid: int
    message_id: str | None
    size: int
    raw: bytes | None
    refused: str | None


@dataclass(frozen=True)
class ImapRead:
    """What one `read_new` saw: the folder's UIDVALIDITY now and the mark to record (the highest
    UID returned, or the mark it started from when nothing was new)."""

    uidvalidity: int
    highest_uid: int
    items: list[MailItem]


@dataclass(frozen=True)
class MailboxUrl:
    """`imaps://user@host:993/FOLDER` (TLS) or `imap://user@host:143/FOLDER` (STARTTLS when the
    server offers it, else plain: for loopback and trusted networks). The password never is in
    the URL: it comes from a file or the environment."""

    tls: bool
    host: str
    port: int
    user: str
    folder: str

    @property
    def where(self) -> str:
        scheme = "imaps" if self.tls else "imap"
        return printable(f"{scheme}://{self.user}@{self.host}:{self.port}/{self.folder}")


def parse_url(url: str) -> MailboxUrl:
    """The URL's parts, or `SourceRefused` naming what is wrong with it."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise SourceRefused(f"not an IMAP URL {printable(url)!r}: {exc}") from None
    if parts.scheme not in ("imap", "imaps"):
        raise SourceRefused(f"not an IMAP URL {printable(url)!r}: it must start imap:// or imaps://")
    if parts.password is not None:
        raise SourceRefused("the IMAP URL holds a password: give it by file or environment instead")
    if not parts.hostname or not parts.username:
        raise SourceRefused(f"the IMAP URL {printable(url)!r} needs user@host, "
                            "like imaps://ap@mail.example.com/INBOX")
    folder = unquote(parts.path.lstrip("/")) or "INBOX"
    if not folder.isascii() or any(c in folder for c in '\r\n\0"\\'):
        raise SourceRefused(f"folder {printable(folder)!r}: only ASCII names without quotes are read")
    tls = parts.scheme == "imaps"
    return MailboxUrl(tls, parts.hostname, port or (993 if tls else 143), unquote(parts.username),
                      folder)


# ------------------------------------------------------------------ the session
class _Session:
    """One logged-in connection. Each command is raced against the connection's loss, since
    aioimaplib leaves a command waiting when the server goes away mid-answer."""

    def __init__(self, mailbox: MailboxUrl, timeout: float) -> None:
        self.mailbox, self.timeout = mailbox, timeout
        self.lost: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()
        self.client: aioimaplib.IMAP4 | None = None
        self.secure = mailbox.tls  # True once the connection is TLS (imaps:// or STARTTLS)

    def _on_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)

    @property
    def protocol(self) -> aioimaplib.IMAP4ClientProtocol:
        assert self.client is not None
        return self.client.protocol

    async def call(self, what: str, step: Awaitable[T], *, overall: bool = True) -> T:
        """`step`'s result; SourceUnreachable if the connection drops or (with `overall`) no
        answer comes within the timeout. Without it, aioimaplib's idle timer is the limit: a large
        body may take longer than `timeout` as long as bytes keep coming."""
        task = asyncio.ensure_future(step)
        done, _ = await asyncio.wait({task, self.lost}, timeout=self.timeout if overall else None,
                                     return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            try:
                return task.result()
            except aioimaplib.CommandTimeout:  # aioimaplib's idle timer: no byte for `timeout`
                raise SourceUnreachable(
                    f"{self.mailbox.where}: no answer to {what} within {self.timeout:g} s",
                    f"mail server {self.mailbox.host} not answering") from None
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        if self.lost.done():
            why = self.lost.result()
            raise SourceUnreachable(
                f"{self.mailbox.where}: the server closed the connection during {what}"
                + (f": {why}" if why else ""), f"mail server {self.mailbox.host} unreachable")
        raise SourceUnreachable(f"{self.mailbox.where}: no answer to {what} within {self.timeout:g} s",
                                f"mail server {self.mailbox.host} not answering")

    async def command(self, what: str, step: Awaitable[Response], *, overall: bool = True) -> Response:
        """An answer that must be OK; NO/BAD become one line with the server's words."""
        response = await self.call(what, step, overall=overall)
        if response.result == "OK":
            return response
        words = _words(response)
        line = f"{self.mailbox.where}: {what}: the server says {response.result} {words}".rstrip()
        if any(f"[{code}" in words.upper() for code in TEMPORARY_CODES):
            raise SourceUnreachable(line, f"mail server {self.mailbox.host}: {words}")
        raise SourceRefused(line)

    async def open(self, password: str) -> None:
        mailbox = self.mailbox
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        self.client = aioimaplib.IMAP4(host=mailbox.host, port=mailbox.port, timeout=self.timeout,
                                       conn_lost_cb=self._on_lost,
                                       ssl_context=context if mailbox.tls else None)
        await self.call("the greeting", self.client.wait_hello_from_server())
        if not mailbox.tls and "STARTTLS" in self.protocol.capabilities:
            await self._starttls(context)
        await self.command("login", self.client.login(_astring(mailbox.user), password))

    async def _starttls(self, context: ssl.SSLContext) -> None:
        """aioimaplib 2.0 has no STARTTLS: send the command through it, then let asyncio wrap the
        same transport in TLS (RFC 3501 §6.2.1) and ask for the capabilities again."""
        protocol = self.protocol
        await self.command("STARTTLS", protocol.execute(Command("STARTTLS", protocol.new_tag(),
                                                                loop=protocol.loop)))
        loop = asyncio.get_running_loop()
        protocol.transport = await self.call("the TLS handshake", loop.start_tls(
            protocol.transport, protocol, context, server_hostname=self.mailbox.host))
        self.secure = True
        await self.call("CAPABILITY", protocol.capability())

    async def examine(self) -> dict[str, int]:
        """EXAMINE the folder (read-only); its UIDVALIDITY, UIDNEXT and EXISTS."""
        folder = _astring(self.mailbox.folder)
        response = await self.command(f"EXAMINE {self.mailbox.folder}",
                                      self.protocol.simple_command("EXAMINE", folder))
        # aioimaplib 2.0 runs EXAMINE as a simple command and so does not note the selected
        # state its UID commands need; the server is in it now (the answer was OK).
        self.protocol.state = aioimaplib.SELECTED
        text = b"\n".join(line for line in response.lines if isinstance(line, bytes))
        found = {k.decode(): int(v) for k, v in re.findall(rb"\[(UIDVALIDITY|UIDNEXT) (\d+)\]", text)}
        if exists := re.search(rb"^(\d+) EXISTS", text, re.M):
            found["EXISTS"] = int(exists[1])
        if "UIDVALIDITY" not in found:
            raise SourceRefused(f"{self.mailbox.where}: the server named no UIDVALIDITY for the folder")
        return found

    async def close(self) -> None:
        if self.client is None:
            return
        with contextlib.suppress(Exception):
            if not self.lost.done():
                await asyncio.wait_for(self.client.logout(), min(self.timeout, 5.0))
        transport = self.protocol.transport
        if transport is not None:
            transport.close()


@contextlib.asynccontextmanager
async def _session(url: str, password: str, timeout: float) -> AsyncIterator[_Session]:
    """A logged-in session; every low-level failure leaves as SourceRefused/SourceUnreachable."""
    mailbox = parse_url(url)
    session = _Session(mailbox, timeout)
    where = mailbox.where
    try:
        await session.open(password)
        yield session
    except (SourceRefused, SourceUnreachable):
        raise
    except ssl.SSLCertVerificationError as exc:
        raise SourceRefused(f"{where}: the server's certificate is not trusted: "
                            f"{exc.verify_message or exc.reason}") from None
    except (TimeoutError, OSError, aioimaplib.CommandTimeout) as exc:
        raise SourceUnreachable(f"{where}: {_oserror_words(exc, timeout)}",
                                f"mail server {mailbox.host} unreachable") from None
    except aioimaplib.AioImapException as exc:
        raise SourceUnreachable(f"{where}: {printable(exc) or type(exc).__name__}",
                                f"mail server {mailbox.host} unreachable") from None
    finally:
        await session.close()


# ------------------------------------------------------------------ reading
async def read_new(url: str, password: str, *, uidvalidity: int | None, after_uid: int,
                   up_to_uid: int | None = None, limit: int = 500, max_bytes: int = MAX_BYTES,
                   timeout: float = 30.0) -> ImapRead:
    """The messages above (uidvalidity, after_uid), at most `limit`, none above `up_to_uid` (the
    night's high-water mark, when the night already fixed one under this UIDVALIDITY), in UID
    order; bodies only for those of at most `max_bytes`. Changes nothing on the server."""
    if limit < 1 or after_uid < 0 or max_bytes < 1:
        raise ValueError("limit and max_bytes must be at least 1, after_uid at least 0")
    async with _session(url, password, timeout) as session:
        folder = await session.examine()
        validity = folder["UIDVALIDITY"]
        if uidvalidity is not None and uidvalidity != validity:
            after_uid, up_to_uid = 0, None  # renumbered: the old marks name other messages now
        start = after_uid + 1
        top = "*" if up_to_uid is None else str(up_to_uid)
        if up_to_uid is not None and up_to_uid < start:
            return ImapRead(validity, after_uid, [])
        found = await session.command("UID SEARCH", session.protocol.search(
            "UID", f"{start}:{top}", by_uid=True, charset=None))
        # `N:*` always matches the last message, even when its UID is below N: filter.
        uids = sorted(u for u in _search_uids(found)
                      if u >= start and (up_to_uid is None or u <= up_to_uid))[:limit]
        items = await _fetch(session, validity, uids, max_bytes)
        return ImapRead(validity, max((i.uid for i in items), default=after_uid), items)


async def _fetch(session: _Session, validity: int, uids: list[int], max_bytes: int) -> list[MailItem]:
    heads: dict[int, tuple[int, str | None]] = {}
    for batch in _chunks(uids, HEADER_BATCH):
        response = await session.command("UID FETCH (sizes)", session.protocol.fetch(
            _uid_set(batch), "(UID RFC822.SIZE BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])", by_uid=True,
            timeout=session.timeout), overall=False)
        for uid, meta, literal in _fetched(response):
            size = re.search(rb"RFC822\.SIZE (\d+)", meta)
            if size and uid in batch:
                heads[uid] = (int(size[1]), _message_id(literal))
    wanted = [uid for uid in uids if uid in heads and heads[uid][0] <= max_bytes]
    bodies: dict[int, bytes] = {}
    for batch in _body_batches(wanted, {uid: heads[uid][0] for uid in wanted}):
        response = await session.command("UID FETCH (bodies)", session.protocol.fetch(
            _uid_set(batch), "(UID BODY.PEEK[])", by_uid=True, timeout=session.timeout), overall=False)
        for uid, _meta, literal in _fetched(response):
            if literal is not None and uid in batch:
                bodies[uid] = literal
    items = []
    for uid in uids:
        if uid not in heads:
            continue  # expunged between the search and the fetch: it is gone, nothing to take
        size, message_id = heads[uid]
        raw = bodies.get(uid)
        refused = None
        if size > max_bytes:
            refused = f"message of {size:,} bytes is over the {max_bytes:,}-byte limit; not downloaded"
        elif raw is None:
            continue  # expunged between the two fetches
        items.append(MailItem(validity, uid, message_id, size, raw, refused))
    return items


def _fetched(response: Response) -> Iterable[tuple[int, bytes, bytes | None]]:
    """(uid, the response's text, its literal) per `* n FETCH (...)` of an aioimaplib response,
    whose lines are bytes for text and a bytearray for each literal."""
    records: list[tuple[bytearray, list[bytes]]] = []
    for line in response.lines:
        if isinstance(line, bytearray):
            if records:
                records[-1][1].append(bytes(line))
        elif re.match(rb"\d+ FETCH \(", line):
            records.append((bytearray(line), []))
        elif records:
            records[-1][0].extend(b" " + line)
    for meta, literals in records:
        uid = re.search(rb"\bUID (\d+)", meta)
        if uid:
            yield int(uid[1]), bytes(meta), literals[0] if literals else None


def _message_id(header: bytes | None) -> str | None:
    if not header:
        return None
    match = re.search(rb"^message-id:[ \t]*(.*(?:\r?\n[ \t].*)*)", header, re.I | re.M)
    if not match:
        return None
    value = re.sub(rb"\s+", b" ", match[1]).strip().decode("ascii", "replace")
    return value or None


def _search_uids(response: Response) -> list[int]:
    uids: list[int] = []
    for line in response.lines:
        if isinstance(line, bytes) and re.fullmatch(rb"[\d ]*", line):
            uids.extend(int(u) for u in line.split())
        elif isinstance(line, bytes) and line.startswith(b"SEARCH"):
            uids.extend(int(u) for u in line.split()[1:] if u.isdigit())
    return uids


def _uid_set(uids: Iterable[int]) -> str:
    """1,2,3,5 -> '1:3,5'."""
    runs: list[list[int]] = []
    for uid in sorted(uids):
        if runs and uid == runs[-1][1] + 1:
            runs[-1][1] = uid
        else:
            runs.append([uid, uid])
    return ",".join(str(a) if a == b else f"{a}:{b}" for a, b in runs)


def _chunks(items: list[int], size: int) -> Iterable[list[int]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _body_batches(uids: list[int], sizes: dict[int, int]) -> Iterable[list[int]]:
    batch: list[int] = []
    total = 0
    for uid in uids:
        if batch and (total + sizes[uid] > BODY_BATCH_BYTES or len(batch) >= BODY_BATCH_COUNT):
            yield batch
            batch, total = [], 0
        batch.append(uid)
        total += sizes[uid]
    if batch:
        yield batch


# ------------------------------------------------------------------ probe and move
async def probe(url: str, password: str, *, timeout: float = 30.0) -> str:
    """One line for `recon source test`: what the folder holds, read with STATUS (nothing
    selected, nothing changed)."""
    async with _session(url, password, timeout) as session:
        mailbox = session.mailbox
        response = await session.command(f"STATUS {mailbox.folder}", session.protocol.simple_command(
            "STATUS", _astring(mailbox.folder), "(MESSAGES UNSEEN UIDVALIDITY UIDNEXT)"))
        text = b" ".join(line for line in response.lines if isinstance(line, bytes))
        counts = {k.decode(): int(v) for k, v in
                  re.findall(rb"\b(MESSAGES|UNSEEN|UIDVALIDITY|UIDNEXT) (\d+)", text)}
        tls = "TLS" if session.secure else "no TLS"
        return (f"{mailbox.where}: {counts.get('MESSAGES', 0)} messages "
                f"({counts.get('UNSEEN', 0)} unseen), UIDVALIDITY {counts.get('UIDVALIDITY', '?')}, "
                f"UIDNEXT {counts.get('UIDNEXT', '?')}, {tls}; nothing changed")


async def move_to(url: str, password: str, uidvalidity: int, uids: Iterable[int], folder: str, *,
                  timeout: float = 30.0) -> int:
    """Move messages (e.g. filed ones, to `recon-unreadable`) once their import has committed:
    UID MOVE when the server has MOVE, else COPY, STORE \\Deleted and UID EXPUNGE of those UIDs
    only (UIDPLUS). The folder is created when missing. Returns how many were asked to move: 0
    when the UIDs were renumbered since (they would name other messages now)."""
    wanted = sorted(set(uids))
    target = parse_url(f"imap://x@h/{folder}").folder  # the same checks as a URL's folder
    if not wanted:
        return 0
    async with _session(url, password, timeout) as session:
        protocol = session.protocol
        name = _astring(session.mailbox.folder)
        response = await session.command(f"SELECT {session.mailbox.folder}", protocol.select(name))
        text = b" ".join(line for line in response.lines if isinstance(line, bytes))
        validity = re.search(rb"\[UIDVALIDITY (\d+)\]", text)
        if not validity or int(validity[1]) != uidvalidity:
            return 0
        created = await session.call("CREATE", protocol.simple_command("CREATE", _astring(target)))
        if created.result != "OK" and "ALREADYEXISTS" not in _words(created).upper():
            raise SourceRefused(f"{session.mailbox.where}: CREATE {target}: the server says "
                                f"{created.result} {_words(created)}")
        uid_set = _uid_set(wanted)
        if "MOVE" in protocol.capabilities:
            await session.command(f"UID MOVE to {target}", protocol.move(uid_set, _astring(target),
                                                                         by_uid=True))
        elif "UIDPLUS" in protocol.capabilities:
            await session.command(f"UID COPY to {target}", protocol.copy(uid_set, _astring(target),
                                                                         by_uid=True))
            await session.command("UID STORE \\Deleted", protocol.store(
                uid_set, "+FLAGS.SILENT", "(\\Deleted)", by_uid=True))
            await session.command("UID EXPUNGE", protocol.expunge(uid_set, by_uid=True))
        else:
            raise SourceRefused(f"{session.mailbox.where}: the server offers neither MOVE nor "
                                "UIDPLUS, so messages cannot be moved without touching others")
        return len(wanted)


# ------------------------------------------------------------------ small helpers
def _astring(value: str) -> str:
    """An IMAP astring: the value as an atom when it is one, else quoted."""
    if value and re.fullmatch(r"[A-Za-z0-9._@+\-/&]+", value):
        return value
    return aioimaplib.quoted(value)


def _words(response: Response) -> str:
    text = " ".join(line.decode("utf-8", "replace") for line in response.lines
                    if isinstance(line, bytes))
    return printable(re.sub(r"\s*\(\d+\.\d+ \+ [\d.+ ]+secs\)\.?", "", text).strip())


def _oserror_words(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError | aioimaplib.CommandTimeout):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed: {printable(exc.reason or exc)}"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError | BrokenPipeError):
        return "connection reset by the server"
    words = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return printable(words or type(exc).__name__)
