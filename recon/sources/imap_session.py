"""One IMAP session for a mailbox source: the URL, the connection (imaps://, or STARTTLS when an
imap:// server offers it), the login, EXAMINE, and every failure turned into one line.

aioimaplib leaves a command waiting when the server goes away mid-answer, and has no STARTTLS:
both are handled here, so the reader (recon/sources/imap.py) only asks and parses. Failures are
`SourceRefused` (permanent: credentials, folder, certificate, URL) or `SourceUnreachable`
(temporary: refused, reset, timed out, TLS cut short, UNAVAILABLE), with the server's words.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import unquote, urlsplit

import aioimaplib
from aioimaplib import Command, Response

from recon.domain.errors import SourceRefused, SourceUnreachable
from recon.domain.printable import printable

T = TypeVar("T")

TEMPORARY_CODES = ("UNAVAILABLE", "INUSE", "LIMIT", "SERVERBUG")  # RFC 5530 codes worth a retry


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


def checked_folder(name: str) -> str:
    """A folder name we can send as it is: ASCII (no modified UTF-7 here), no quotes or
    backslashes, no control characters."""
    if not name or not name.isascii() or any(c in name for c in '"\\') or not name.isprintable():
        raise SourceRefused(f"folder {printable(name)!r}: only ASCII names without quotes are read")
    return name


def parse_url(url: str) -> MailboxUrl:
    """The URL's parts, or `SourceRefused` naming what is wrong with it."""
    shown = printable(re.sub(r"(//[^/@:]*):[^/@]*@", r"\1:***@", url))  # never echo a password
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise SourceRefused(f"not an IMAP URL {shown!r}: {exc}") from None
    if parts.scheme not in ("imap", "imaps"):
        raise SourceRefused(f"not an IMAP URL {shown!r}: it must start imap:// or imaps://")
    if parts.password is not None:
        raise SourceRefused("the IMAP URL holds a password: give it by file or environment instead")
    if not parts.hostname or not parts.username:
        raise SourceRefused(f"the IMAP URL {shown!r} needs user@host, "
                            "like imaps://ap@mail.example.com/INBOX")
    folder = checked_folder(unquote(parts.path.lstrip("/")) or "INBOX")
    tls = parts.scheme == "imaps"
    return MailboxUrl(tls, parts.hostname, port or (993 if tls else 143), unquote(parts.username),
                      folder)


class Session:
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
        said = words(response)
        line = f"{self.mailbox.where}: {what}: the server says {response.result} {said}".rstrip()
        if any(f"[{code}" in said.upper() for code in TEMPORARY_CODES):
            raise SourceUnreachable(line, f"mail server {self.mailbox.host}: {said}")
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
        await self.command("login", self.client.login(astring(mailbox.user), password))

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
        folder = astring(self.mailbox.folder)
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
async def open_session(url: str, password: str, timeout: float) -> AsyncIterator[Session]:
    """A logged-in session; every low-level failure leaves as SourceRefused/SourceUnreachable."""
    mailbox = parse_url(url)
    opened = Session(mailbox, timeout)
    where = mailbox.where
    try:
        await opened.open(password)
        yield opened
    except (SourceRefused, SourceUnreachable):
        raise
    except ssl.SSLCertVerificationError as exc:
        raise SourceRefused(f"{where}: the server's certificate is not trusted: "
                            f"{exc.verify_message or exc.reason}") from None
    except (TimeoutError, OSError, aioimaplib.CommandTimeout) as exc:
        raise SourceUnreachable(f"{where}: {_oserrorwords(exc, timeout)}",
                                f"mail server {mailbox.host} unreachable") from None
    except aioimaplib.AioImapException as exc:
        raise SourceUnreachable(f"{where}: {printable(exc) or type(exc).__name__}",
                                f"mail server {mailbox.host} unreachable") from None
    finally:
        await opened.close()


def astring(value: str) -> str:
    """An IMAP astring: the value as an atom when it is one, else quoted."""
    if value and re.fullmatch(r"[A-Za-z0-9._@+\-/&]+", value):
        return value
    return aioimaplib.quoted(value)


def words(response: Response) -> str:
    text = " ".join(line.decode("utf-8", "replace") for line in response.lines
                    if isinstance(line, bytes))
    return printable(re.sub(r"\s*\(\d+\.\d+ \+ [\d.+ ]+secs\)\.?", "", text).strip())


def _oserrorwords(exc: BaseException, timeout: float) -> str:
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
