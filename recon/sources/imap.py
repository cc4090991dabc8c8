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
short, UNAVAILABLE); both live in recon/domain/errors.py, and the session that raises them in
recon/sources/imap_session.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from aioimaplib import Response

from recon.domain.errors import SourceRefused
from recon.sources.imap_session import (
    MailboxUrl,
    Session,
    astring,
    checked_folder,
    open_session,
    parse_url,
    words,
)

__all__ = ["ImapRead", "MailItem", "MailboxUrl", "move_to", "parse_url", "probe", "read_new"]

MAX_BYTES = 25 * 2**20
HEADER_BATCH = 100  # aioimaplib parses a response chunk recursively, a frame per line: keep it small
BODY_BATCH_BYTES = 8 * 2**20
BODY_BATCH_COUNT = 50


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


# ------------------------------------------------------------------ reading
async def read_new(url: str, password: str, *, uidvalidity: int | None, after_uid: int,
                   up_to_uid: int | None = None, limit: int = 500, max_bytes: int = MAX_BYTES,
                   timeout: float = 30.0) -> ImapRead:
    """The messages above (uidvalidity, after_uid), at most `limit`, none above `up_to_uid` (the
    night's high-water mark, when the night already fixed one under this UIDVALIDITY), in UID
    order; bodies only for those of at most `max_bytes`. Changes nothing on the server."""
    if limit < 1 or after_uid < 0 or max_bytes < 1:
        raise ValueError("limit and max_bytes must be at least 1, after_uid at least 0")
    async with open_session(url, password, timeout) as session:
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


async def _fetch(session: Session, validity: int, uids: list[int], max_bytes: int) -> list[MailItem]:
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
            refused = (f"message of {size:,} bytes is over the {max_bytes:,}-byte limit "
                       "(RECON_MAIL_MAX_MESSAGE_BYTES); not downloaded")
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
    async with open_session(url, password, timeout) as session:
        mailbox = session.mailbox
        response = await session.command(f"STATUS {mailbox.folder}", session.protocol.simple_command(
            "STATUS", astring(mailbox.folder), "(MESSAGES UNSEEN UIDVALIDITY UIDNEXT)"))
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
    target = checked_folder(folder)
    if not wanted:
        return 0
    async with open_session(url, password, timeout) as session:
        protocol = session.protocol
        name = astring(session.mailbox.folder)
        response = await session.command(f"opening {session.mailbox.folder} to move", protocol.select(name))
        text = b" ".join(line for line in response.lines if isinstance(line, bytes))
        validity = re.search(rb"\[UIDVALIDITY (\d+)\]", text)
        if not validity or int(validity[1]) != uidvalidity:
            return 0
        created = await session.call("CREATE", protocol.simple_command("CREATE", astring(target)))
        if created.result != "OK" and "ALREADYEXISTS" not in words(created).upper():
            raise SourceRefused(f"{session.mailbox.where}: CREATE {target}: the server says "
                                f"{created.result} {words(created)}")
        uid_set = _uid_set(wanted)
        if "MOVE" in protocol.capabilities:
            await session.command(f"UID MOVE to {target}", protocol.move(uid_set, astring(target),
                                                                         by_uid=True))
        elif "UIDPLUS" in protocol.capabilities:
            await session.command(f"UID COPY to {target}", protocol.copy(uid_set, astring(target),
                                                                         by_uid=True))
            await session.command("UID STORE \\Deleted", protocol.store(
                uid_set, "+FLAGS.SILENT", "(\\Deleted)", by_uid=True))
            await session.command("UID EXPUNGE", protocol.expunge(uid_set, by_uid=True))
        else:
            raise SourceRefused(f"{session.mailbox.where}: the server offers neither MOVE nor "
                                "UIDPLUS, so messages cannot be moved without touching others")
        return len(wanted)


