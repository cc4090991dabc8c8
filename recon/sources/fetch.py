"""Step 1's fetch: everything new at the night's sources comes in before the night fixes its
working set (docs/sources.md).

The night's set is fixed by its first fetch and re-used by every retry: a folder's set is the
files it listed then (recorded as `pending` items with the night's mark), a mailbox's is the
UIDs below the UIDNEXT it saw then. What arrives later belongs to the next night.

Each item is recorded in the transaction that imports it, under a per-source lock, so a worker
killed anywhere leaves every document imported once: a committed item is never taken again, an
uncommitted one is taken again whole. ERP exports load through `recon load`'s own transactions,
whose keys make a second load of the same bytes write nothing; the item is settled after.

- a drop folder's file that cannot be used (no supplier named, hostile, not an invoice) is
  recorded as filed with its reason: the night goes on;
- a message goes through `recon import --maildir`'s readers and refusals (recon/documents/inbox.py);
- an ERP file that is refused stops the night (`MasterDataRefused`, naming file:line: why):
  a night never matches against half-loaded master data.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import os
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

import asyncpg

from recon.documents import master_load
from recon.documents.importer import take_file
from recon.documents.inbox import (
    MAX_ATTACHMENTS,
    MAX_MESSAGE_BYTES,
    clean_message_id,
    one_line,
    read_message_bytes,
    take_messages,
)
from recon.domain.cell_formats import CellFormats
from recon.domain.errors import (
    ImportProblem,
    MasterDataRefused,
    NightStarted,
    SourceRefused,
    SourceUnreachable,
)
from recon.runtime import failpoints
from recon.sources import erp
from recon.sources.files import MAX_FILE_BYTES, SETTLED_SECONDS, read_whole, settled_files
from recon.sources.secrets import read_secret
from recon.store import sources as store

T = TypeVar("T")
FAILPOINT = "fetch_sources"  # `fetch_sources:N`: between reading the night's Nth item and recording it
MOVE_FAILPOINT = "move_filed"  # `move_filed:N`: the Nth move of filed mail, after the import committed
IMAP_BATCH = 50  # messages fetched per round trip, so a 10,000-message folder never sits in memory
IMAP_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Night:
    workflow_id: str
    day: date
    warehouse: str
    # Hostile mail is filed alone, with its reason (RECON_MAIL_MAX_MESSAGE_BYTES, _ATTACHMENTS):
    # a larger message is not even downloaded.
    max_message_bytes: int = MAX_MESSAGE_BYTES
    max_attachments: int = MAX_ATTACHMENTS


@dataclass
class Fetched:
    """What this attempt took (an earlier attempt's items are counted by `recon status`)."""

    imported: int = 0
    filed: int = 0
    loaded: int = 0
    seen: int = 0  # items read this attempt, the failpoint's position
    moved: int = 0  # filed messages moved to the source's --file-to folder this attempt
    moves: int = 0  # moves asked of the server this attempt, the move failpoint's position
    lines: list[str] = field(default_factory=list)

    def taken(self, outcome: str) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)


def imap_module() -> Any:
    """recon/sources/imap.py, or a one-line refusal when this installation has none."""
    try:
        return importlib.import_module("recon.sources.imap")
    except ModuleNotFoundError as exc:
        if exc.name not in ("recon.sources.imap", "aioimaplib"):
            raise
        raise SourceRefused(f"IMAP sources need recon.sources.imap, which this installation "
                            f"lacks ({exc.name} is missing)") from None


async def fetch_night(pool: asyncpg.Pool, night: Night) -> Fetched:
    """Fetch every source of the night's warehouse, ERP exports first."""
    done = Fetched()
    for source in await store.for_warehouse(pool, night.warehouse):
        if source["kind"] == "erp":
            await _fetch_erp(pool, source, night, done)
        elif source["kind"] == "folder":
            await _fetch_folder(pool, source, night, done)
        else:
            await _fetch_imap(pool, source, night, done)
    return done


def _hash_file(path: Path) -> str | None:
    """The file's SHA-256, streamed (a huge file is still named); None if it went away."""
    digest = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # gone, or swapped for a link since it was listed: not taken tonight
        return None
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


async def _claim(pool: asyncpg.Pool, source_id: int, night: Night, folder: Path,
                 wanted: Any = None) -> None:
    """The night's set of a folder, once: its settled files no night has claimed, claimed with
    the night's mark in one transaction. A retry finds the mark and claims nothing new."""
    async with pool.acquire() as conn:
        if await store.mark(conn, source_id, night.workflow_id) is not None:
            return
        try:
            listed = [f for f in await settled_files(folder) if wanted is None or wanted(f.name)]
        except OSError as exc:  # a mount gone, a folder not there yet: an outage, in its words
            words = exc.strerror or str(exc)
            raise SourceUnreachable(f"folder {folder}: {words}",
                                    f"folder {folder} unreachable ({words})") from exc
        known = await store.known_files(conn, source_id)
        claims = []
        for f in listed:  # hashed off the event loop: the heartbeat goes on beside a huge file
            sha = await asyncio.to_thread(_hash_file, f.path)
            if sha is not None and (sha, f.name) not in known:
                claims.append((sha, f.name))
        async with conn.transaction():
            await store.lock_source(conn, source_id)
            if await store.set_mark(conn, source_id, night.workflow_id):
                await store.claim_files(conn, source_id, night.workflow_id, claims)


async def _current(conn: asyncpg.Connection, source_id: int, night: Night, item: asyncpg.Record,
                   folder: Path, *, export: bool = False) -> bytes | None:
    """The pending item's bytes if the file still holds what was claimed. A file gone is filed;
    a file replaced is filed and its new content claimed for this night (a corrected export).
    A drop folder's file that cannot be read is filed; an ERP export stops the night."""
    try:
        data = read_whole(folder / item["name"],
                          master_load.MAX_FILE_BYTES if export else MAX_FILE_BYTES)
    except FileNotFoundError:
        reason = "removed from the folder before the night took it"
    except (ValueError, OSError) as exc:
        if export:
            raise MasterDataRefused(f"{folder / item['name']}: cannot be loaded: {exc} (nothing of "
                                    "it was loaded, and the night does not match against "
                                    "half-loaded master data)") from None
        reason = str(exc)
    else:
        sha = hashlib.sha256(data).hexdigest()
        if sha == item["sha256"]:
            return data
        # A corrected file put in its place (settled) is this night's; one still being written
        # is left for the next night's listing, so a file that never stops changing ends here.
        try:
            settled = time.time() - os.stat(folder / item["name"]).st_mtime >= SETTLED_SECONDS
        except OSError:
            settled = False
        reason = ("changed before the night took it: its new content is taken as a new file"
                  if settled else "changed before the night took it and still changing: the "
                  "next night takes it once it has settled")
        async with conn.transaction():
            await store.lock_source(conn, source_id)
            if await store.settle(conn, item["id"], "filed", reason) and settled:
                await store.claim_files(conn, source_id, night.workflow_id, [(sha, item["name"])])
        return None
    async with conn.transaction():
        await store.lock_source(conn, source_id)
        await store.settle(conn, item["id"], "filed", reason)
    return None


async def _fetch_folder(pool: asyncpg.Pool, source: asyncpg.Record, night: Night,
                        done: Fetched) -> None:
    folder = Path(source["url"].split(":", 1)[1])
    await _claim(pool, source["id"], night, folder)
    async with pool.acquire() as conn:
        while items := await store.pending(conn, source["id"], night.workflow_id):
            for item in items:
                data = await _current(conn, source["id"], night, item, folder)
                if data is None:
                    continue
                done.seen += 1
                failpoints.hit(FAILPOINT, done.seen)
                async with conn.transaction():
                    await store.lock_source(conn, source["id"])
                    if not await store.still_pending(conn, item["id"]):
                        continue  # an attempt before this one committed it
                    outcome, reason, documents = await _import_file(conn, item["name"], data, night)
                    await store.settle(conn, item["id"], outcome, reason, documents)
                done.taken(outcome)


async def _import_file(conn: asyncpg.Connection, name: str, data: bytes,
                       night: Night) -> tuple[str, str, int]:
    """(outcome, reason, documents) of one file, imported in a savepoint: a refusal undoes the
    file's writes only, and the file is recorded as filed with the refusal's words."""
    try:
        async with conn.transaction():
            taken = await take_file(conn, name, data, night.day, night.warehouse)
    except NightStarted:
        raise  # cannot happen before step 1 copies the night; never file a document silently
    except ImportProblem as exc:
        return "filed", str(exc), 0
    documents = taken.imported + taken.credit_notes
    if taken.refused:
        return "filed", "; ".join(taken.refused), 0
    if not documents and taken.skipped_existing + taken.credit_notes_existing:
        return "imported", "already there (imported before)", 0
    if not documents:
        return "filed", "nothing in it to import", 0
    return "imported", "", documents


async def _fetch_erp(pool: asyncpg.Pool, source: asyncpg.Record, night: Night,
                     done: Fetched) -> None:
    folder = Path(source["url"].split(":", 1)[1])
    settings = json.loads(source["settings"] or "{}")
    formats = CellFormats.of(settings.get("date_format"), settings.get("amount_format"))
    await _claim(pool, source["id"], night, folder, wanted=lambda name: erp.kind_of(name) is not None)
    async with pool.acquire() as conn:
        while items := await store.pending(conn, source["id"], night.workflow_id):
            by_name = {i["name"]: i for i in items}
            for kind, name in erp.load_order(list(by_name)):
                item = by_name[name]
                data = await _current(conn, source["id"], night, item, folder, export=True)
                if data is None:
                    break  # filed, or replaced by its new content: the order is read again
                done.seen += 1
                failpoints.hit(FAILPOINT, done.seen)
                loader = getattr(master_load, erp.LOADER[kind])
                # Its own transaction, all or nothing; a refusal (MasterDataRefused, naming
                # file:line: field: why) stops the night here, the item left pending.
                try:
                    summary = await loader(pool, folder / name, formats, data=data)
                except MasterDataRefused as exc:
                    raise MasterDataRefused(
                        f"{exc} (nothing of {name} was loaded, and the night does not match "
                        "against half-loaded master data: put the export right and answer "
                        "retry)") from None
                async with conn.transaction():
                    await store.lock_source(conn, source["id"])
                    await store.settle(conn, item["id"], "loaded", summary.line())
                done.taken("loaded")
                done.lines.append(summary.line())


async def _server(url: str, call: Awaitable[T]) -> T:
    """A call to the mail server: a connection that fails or times out is an outage (temporary:
    ridden out within the outage window, then handed over naming the server and its words)."""
    try:
        return await call
    except SourceUnreachable:
        raise
    except (OSError, TimeoutError) as exc:
        host = url.split("@", 1)[-1].split("/", 1)[0]
        raise SourceUnreachable(f"{url}: {type(exc).__name__}: {exc}",
                                f"mail server {host} unreachable") from exc


async def _fetch_imap(pool: asyncpg.Pool, source: asyncpg.Record, night: Night,
                      done: Fetched) -> None:
    """A mailbox's new messages, through recon/sources/imap.py (aioimaplib, `BODY.PEEK[]`):

    - `await read_new(url, password, *, uidvalidity, after_uid, up_to_uid, limit) -> ImapRead`
      (`.uidvalidity`, `.highest_uid`, `.items`): at most `limit` messages with
      after_uid < UID <= up_to_uid in UID order; a changed UIDVALIDITY reads from UID 1 and says
      so in `.uidvalidity`. Each item has `.uidvalidity`, `.uid`, `.message_id` (or None),
      `.raw` (the RFC 5322 bytes, None when it was not downloaded) and `.refused` (why not);
    - the night's mark (UIDVALIDITY, UIDNEXT): `await mailbox_state(url, password)` when the module
      has it, else EXAMINE through `recon.sources.imap_session.open_session(...).examine()`, else
      the highest UID of the night's first page (the rest is the next night's: later, never lost);
    - `SourceRefused` (a refused login: hand over at once) and `SourceUnreachable` (an outage).
    """
    url, password = source["url"], read_secret(source["secret_ref"])
    imap = imap_module()
    sid = source["id"]
    file_to = json.loads(source["settings"] or "{}").get("file_to")
    async with pool.acquire() as conn:
        mark = await store.mark(conn, sid, night.workflow_id)
        if mark is None:
            first = await _first_mark(conn, imap, url, password, sid)
            await store.set_mark(conn, sid, night.workflow_id, *first)
            mark = await store.mark(conn, sid, night.workflow_id)
        validity, below = mark["uidvalidity"], mark["uidnext"]
        after = await store.last_uid(conn, sid, validity)
        await _move_filed(conn, imap, url, password, sid, validity, file_to, done)  # a kill's leftovers
        while after + 1 < below:
            read = await _server(url, imap.read_new(
                url, password, uidvalidity=validity, after_uid=after, up_to_uid=below - 1,
                limit=IMAP_BATCH, max_bytes=night.max_message_bytes))
            if read.uidvalidity != validity:
                # Renumbered (a new UIDVALIDITY): the whole folder is the night's set again; what
                # was taken before is known by its Message-ID, so nothing is doubled or lost.
                validity, below = await _first_mark(conn, imap, url, password, sid)
                await store.remark(conn, sid, night.workflow_id, validity, below)
                after = await store.last_uid(conn, sid, validity)
                continue
            if not read.items:
                break
            for message in read.items:
                await take_message(conn, sid, night, message, done)
            after = max(after, read.highest_uid)
            await _move_filed(conn, imap, url, password, sid, validity, file_to, done)


async def _move_filed(conn: asyncpg.Connection, imap: Any, url: str, password: str | None,
                      source_id: int, validity: int, folder: str | None, done: Fetched) -> None:
    """Move the source's filed messages to its `--file-to` folder, only once their rows are
    committed: a kill before the move leaves them recorded and unmoved, and the next fetch (this
    night's retry or the next night's) moves them; moved twice is harmless (UIDs no longer there
    are nothing to the server); a message is never lost, nor imported again (its row knows it)."""
    if not folder:
        return
    uids = await store.to_move(conn, source_id, validity)
    if not uids:
        return
    done.moves += 1
    failpoints.hit(MOVE_FAILPOINT, done.moves)
    asked = await _server(url, imap.move_to(url, password, validity, uids, folder,
                                            timeout=IMAP_TIMEOUT_SECONDS))
    if asked:  # 0: renumbered since, those UIDs name other messages now; never moved by them
        await store.moved(conn, source_id, validity, uids, folder)
        done.moved += len(uids)


async def _first_mark(conn: asyncpg.Connection, imap: Any, url: str, password: str | None,
                      source_id: int) -> tuple[int, int]:
    """(uidvalidity, uidnext) of the night: the folder's UIDNEXT now, so what arrives later is
    the next night's."""
    state = getattr(imap, "mailbox_state", None)
    if state is not None:
        validity, uidnext = await _server(url, state(url, password))
        return int(validity), int(uidnext)
    session = importlib.import_module("recon.sources.imap_session")
    if hasattr(session, "open_session"):  # EXAMINE (read-only) names UIDVALIDITY and UIDNEXT
        folder = await _server(url, _examine(session, url, password))
        return int(folder["UIDVALIDITY"]), int(folder["UIDNEXT"])
    peek = await _server(url, imap.read_new(url, password, uidvalidity=None, after_uid=0,
                                            up_to_uid=None, limit=1))
    after = await store.last_uid(conn, source_id, peek.uidvalidity)
    page = await _server(url, imap.read_new(url, password, uidvalidity=peek.uidvalidity,
                                            after_uid=after, up_to_uid=None, limit=IMAP_BATCH))
    return page.uidvalidity, page.highest_uid + 1


async def _examine(session: Any, url: str, password: str | None) -> dict[str, int]:
    async with session.open_session(url, password, IMAP_TIMEOUT_SECONDS) as opened:
        return await opened.examine()


async def take_message(conn: asyncpg.Connection, source_id: int, night: Night, message: Any,
                       done: Fetched) -> None:
    """One message: recorded with its import in one transaction, or skipped if known. A message
    the client did not download (`raw` None: over the size limit) is filed with its reason; so
    is one the readers cannot use (hostile MIME, too many attachments), each alone."""
    raw: bytes | None = message.raw
    read = None
    if raw is not None:  # read before the transaction: parsing a hostile message holds no lock
        read = read_message_bytes(raw, f"uid {message.uid}", max_bytes=night.max_message_bytes,
                                  max_attachments=night.max_attachments)
        message_id = read.message_id  # as `recon import --maildir` names it, byte for byte
    else:
        message_id = clean_message_id(message.message_id) or f"uid:{message.uidvalidity}:{message.uid}"
    done.seen += 1
    failpoints.hit(FAILPOINT, done.seen)  # read, not yet recorded
    async with conn.transaction():
        await store.lock_source(conn, source_id)
        if await store.item_known(conn, source_id, message.uidvalidity, message.uid, message_id):
            return
        if read is None:
            await store.record_message(
                conn, source_id, night.workflow_id, message.uidvalidity, message.uid, message_id,
                f"uid {message.uid}", "filed",
                one_line(getattr(message, "refused", None) or "not downloaded"), 0)
            done.taken("filed")
            return
        try:
            async with conn.transaction():  # a savepoint: a refusal undoes this message only
                taken, fresh = await take_messages(conn, [read], night.day, night.warehouse)
        except NightStarted:
            raise
        except ImportProblem as exc:
            taken, fresh, read.problem = None, [read], str(exc)
        if not fresh:  # imported before (by `recon import --maildir` or another source)
            outcome, reason, documents = "imported", "already there (imported before)", 0
        elif read.problem:
            outcome, reason, documents = "filed", one_line(read.problem), 0
        else:
            assert taken is not None
            outcome, reason, documents = "imported", "", taken.imported + taken.credit_notes
        await store.record_message(conn, source_id, night.workflow_id, message.uidvalidity,
                                   message.uid, message_id, read.name, outcome, reason, documents)
    done.taken(outcome)
