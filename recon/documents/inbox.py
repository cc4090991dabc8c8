"""`recon import --maildir DIR`: a mailbox of supplier mail becomes a night's documents.

Each message in `DIR/new` and `DIR/cur` is read with the standard `email` package. Its documents
are its attachments (PDF, XML, JSON, text, CSV, or any file by its content) and its body when the
body is itself an invoice (a text layout, an e-invoice JSON or XML a reader recognises); a
covering note ("please find attached") is not a document. Pictures are documents only in a
message that carries nothing else (a photographed or scanned invoice, parked: OCR is not done);
beside a document they are logos.

- A message is dealt with once: its `Message-ID` (or, if it has none, the SHA-256 of its bytes)
  is recorded in `mail_messages` in the import's transaction; a message already recorded is
  skipped, whatever happened to it since.
- A message that cannot be used on its own (no invoice in it; a document whose supplier cannot be
  told by its ids, its PO or the sender's address; a credit note that breaks the checks; a
  currency the supplier does not bill in; a contradiction inside a document) is filed, not
  refused: recorded with the reason and moved to the Maildir folder `DIR/.Unreadable` after the
  import commits. One stranger's mail must not hold up a night.
- What concerns more than one message is refused like a folder, nothing written, nothing moved:
  two messages carrying one (supplier, number) with different files. The same file sent twice
  (a reminder) is one document.
- Imported messages are marked seen (moved from `new` to `cur` with the `S` flag).
- A document no reader can read before the night (free text for a model, a scan) keeps its
  attachment's name plus the message's short digest as a provisional number.
"""

from __future__ import annotations

import email
import email.policy
import hashlib
import mailbox
import os
import re
from dataclasses import dataclass, field
from datetime import date
from email.message import EmailMessage
from email.utils import parseaddr
from pathlib import Path

import asyncpg

from recon.documents.attribution import (
    Directory,
    Incoming,
    attribute,
    credit_note_problem,
    currency_problem,
    stem_of,
)
from recon.documents.formats.detect import UNREADABLE_MARK, FileReading, read_file
from recon.documents.formats.pdf_text import OCR_NOTE
from recon.documents.formats.reading import CREDIT_NOTE
from recon.documents.intake import IntakeResult, directory, plan, store
from recon.domain.errors import ImportProblem
from recon.domain.settings_table import default_of
from recon.store.inbox import known_messages, record_messages

MAX_MESSAGE_BYTES: int = default_of("RECON_MAIL_MAX_MESSAGE_BYTES")  # type: ignore[assignment]
MAX_ATTACHMENTS: int = default_of("RECON_MAIL_MAX_ATTACHMENTS")  # type: ignore[assignment]
MAX_MESSAGE_ID_CHARS = 500  # a longer one is named by its hash: Postgres indexes it, and a row shows it
UNREADABLE_FOLDER = "Unreadable"
_SKIPPED_TYPES = ("application/pkcs7-signature", "application/pgp-signature", "text/vcard",
                  "text/x-vcard", "text/calendar", "text/html")


@dataclass
class Message:
    name: str  # the Maildir file's name, or the source's name of the message (`INBOX uid 42`)
    message_id: str
    sender: str
    documents: list[Incoming] = field(default_factory=list)
    problem: str | None = None
    path: Path | None = None  # the Maildir file, which is moved after the import commits


@dataclass(frozen=True)
class InboxResult:
    intake: IntakeResult
    messages: int
    already_seen: int
    unreadable: list[str]  # "file (message id): reason"


def one_line(text: str) -> str:
    """A name or a reason as one printable line: a hostile header's CR, LF, NUL or lone surrogate
    must neither split `recon status`'s lines nor be refused by Postgres (text holds no NUL)."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return re.sub(r"[\x00-\x1f\x7f]+", " ", text).strip()


def clean_message_id(found: str | None) -> str | None:
    """A Message-ID as recorded: one printable line, and a hash for one too long to index. A
    well-formed one is kept byte for byte, so a message is known the same by every path."""
    if not found:
        return None
    cleaned = one_line(found)
    if len(cleaned) > MAX_MESSAGE_ID_CHARS:
        return "sha256:" + hashlib.sha256(found.encode("utf-8", "replace")).hexdigest()
    return cleaned or None


def _message_files(folder: Path) -> list[Path]:
    found = []
    for sub in ("new", "cur"):
        where = folder / sub
        if not where.is_dir():
            continue
        for entry in sorted(os.scandir(where), key=lambda e: e.name):
            if not entry.name.startswith(".") and entry.is_file(follow_symlinks=False):
                found.append(Path(entry.path))
    return found


def _scan(name: str, data: bytes) -> FileReading:
    reason = f"{name}: an image (a scan): {OCR_NOTE}"
    return FileReading(name, "image-scan", f"{UNREADABLE_MARK}{reason}\n",
                       hashlib.sha256(data).hexdigest(), problem=reason)


def _documents(msg: EmailMessage, message_id: str, short: str) -> list[Incoming]:
    """The message's documents. Pictures count only when nothing else is attached: then they are
    scans (parked, OCR is not done); beside a document they are logos and signatures."""
    docs, pictures = [], []
    for n, part in enumerate(msg.iter_attachments(), 1):
        ctype = part.get_content_type()
        if ctype in _SKIPPED_TYPES or part.is_multipart():
            continue
        name = one_line(os.path.basename(part.get_filename() or "")) or f"attachment-{n}"
        data = part.get_payload(decode=True) or b""
        file = read_file(name, data)
        if ctype.startswith("image/") and file.format not in ("image-scan", "binary"):
            file = _scan(name, data)  # a picture by its type, whatever its first bytes
        (pictures if file.format == "image-scan" else docs).append(
            Incoming(file, f"{name} (message {message_id[:120]})", f"{stem_of(name)}-{short}"))
    body = msg.get_body(preferencelist=("plain",))
    if body is not None:
        text = body.get_content()
        file = read_file("body", text.encode("utf-8"))
        if file.reading is not None:
            docs.append(Incoming(file, f"body (message {message_id[:120]})", f"body-{short}"))
    return docs or pictures


def read_message(path: Path) -> Message:
    with path.open("rb") as handle:
        data = handle.read(MAX_MESSAGE_BYTES + 1)
    found = read_message_bytes(data, path.name)
    found.path = path
    return found


def message_id_of(data: bytes) -> str:
    """The message's `Message-ID`, or the SHA-256 of its bytes when it has none."""
    try:
        msg = email.message_from_bytes(data, policy=email.policy.default)
        found = clean_message_id(str(msg.get("Message-ID") or "").strip())
    except Exception:  # noqa: BLE001 - a hostile header of any kind: the message is named by its bytes
        found = None
    return found or "sha256:" + hashlib.sha256(data).hexdigest()


def read_message_bytes(data: bytes, name: str, *, max_bytes: int = MAX_MESSAGE_BYTES,
                       max_attachments: int = MAX_ATTACHMENTS) -> Message:
    """One RFC 5322 message, from a Maildir file or an IMAP fetch alike: its documents, or why
    it cannot be used on its own. Hostile mail is filed, never raised: one over `max_bytes`, one
    with more than `max_attachments` parts to read, one whose MIME the parser cannot walk (nested
    thousands deep, a charset no codec knows). Archives are never expanded: a .zip or .gz is one
    file of unknown content, so a zip bomb costs its own few bytes."""
    name = one_line(name)
    if len(data) > max_bytes:
        return Message(name, "sha256:" + hashlib.sha256(data).hexdigest(), "",
                       problem=f"message of {len(data):,} bytes is over the {max_bytes:,}-byte limit "
                               "(RECON_MAIL_MAX_MESSAGE_BYTES)")
    try:
        msg = email.message_from_bytes(data, policy=email.policy.default)
        assert isinstance(msg, EmailMessage)
        message_id = (clean_message_id(str(msg.get("Message-ID") or "").strip())
                      or "sha256:" + hashlib.sha256(data).hexdigest())
        sender = one_line(parseaddr(str(msg.get("From") or ""))[1].lower())
    except Exception as exc:  # noqa: BLE001 - headers no parser can walk: filed by its bytes
        return Message(name, "sha256:" + hashlib.sha256(data).hexdigest(), "",
                       problem=f"the message cannot be read ({_why(exc)})")
    short = hashlib.sha256(message_id.encode()).hexdigest()[:8]
    found = Message(name, message_id, sender)
    try:
        parts = sum(1 for _ in msg.iter_attachments())
        if parts > max_attachments:
            found.problem = (f"{parts:,} attachments, over the limit of {max_attachments:,} a message "
                             "(RECON_MAIL_MAX_ATTACHMENTS)")
            return found
        found.documents = _documents(msg, message_id, short)
    except Exception as exc:  # noqa: BLE001 - broken MIME, a bad charset, nesting past recursion
        found.problem = f"the message cannot be read ({_why(exc)})"
        return found
    if not found.documents:
        found.problem = "no invoice in the message (no attachment, and the body is no invoice)"
    return found


def _why(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}")[:120]


def _file_away(folder: Path, path: Path) -> None:
    box = mailbox.Maildir(folder, create=False)
    try:
        target = box.get_folder(UNREADABLE_FOLDER)
    except mailbox.NoSuchMailboxError:
        target = box.add_folder(UNREADABLE_FOLDER)
    destination = Path(target._path) / "cur" / path.name  # noqa: SLF001 - Maildir has no getter
    os.replace(path, destination)


def _mark_seen(path: Path) -> None:
    if path.parent.name != "new":
        return
    os.replace(path, path.parent.parent / "cur" / f"{path.name.split(':')[0]}:2,S")


async def import_maildir(pool: asyncpg.Pool, folder: Path, business_date: str, warehouse: str,
                         supplier: str | None = None, replace: bool = False) -> InboxResult:
    day = date.fromisoformat(business_date)
    if not (folder / "new").is_dir() and not (folder / "cur").is_dir():
        raise ImportProblem(f"{folder} is not a Maildir (no new/ or cur/ inside)")
    messages = [read_message(path) for path in _message_files(folder)]
    async with pool.acquire() as conn, conn.transaction():
        taken, fresh = await take_messages(conn, messages, day, warehouse, supplier, replace)
    for m in fresh:  # after the commit: the rows say what happened, the moves only tidy up
        assert m.path is not None
        if m.problem:
            _file_away(folder, m.path)
        else:
            _mark_seen(m.path)
    return InboxResult(intake=taken, messages=sum(1 for m in fresh if not m.problem),
                       already_seen=len(messages) - len(fresh),
                       unreadable=[f"{m.name} ({m.message_id}): {m.problem}"
                                   for m in fresh if m.problem])


async def take_messages(conn: asyncpg.Connection, messages: list[Message], day: date,
                        warehouse: str, supplier: str | None = None, replace: bool = False,
                        ) -> tuple[IntakeResult, list[Message]]:
    """Import messages on the caller's connection, inside the caller's transaction (a mailbox
    source records its own row for each in the same one): the messages not dealt with before
    (by Message-ID) are recorded, each imported or filed with its reason. Returns what was
    stored and the fresh messages, their `problem` set for each filed one."""
    seen = await known_messages(conn, [m.message_id for m in messages])
    fresh, unique = [], set()
    for m in messages:
        if m.message_id not in seen and m.message_id not in unique:
            unique.add(m.message_id)
            fresh.append(m)
    where = await directory(conn, [d for m in fresh for d in m.documents])
    by_email = where.by_email
    for m in fresh:
        if m.problem:
            continue
        hint = by_email.get(m.sender)
        for doc in m.documents:
            doc.sender_hint = hint
        m.problem = _message_problem(m, where, supplier)
    usable = [m for m in fresh if not m.problem]
    batch = plan([d for m in usable for d in m.documents], where, supplier,
                 collapse_identical=True)
    taken = await store(conn, batch, day, warehouse, replace)
    await record_messages(conn, [
        (m.message_id, day, warehouse, "unreadable" if m.problem else "imported",
         m.problem or "", 0 if m.problem else len(m.documents), m.name) for m in fresh])
    return taken, fresh


def _message_problem(m: Message, where: Directory, fallback: str | None) -> str | None:
    """Why this message cannot be taken on its own, or None."""
    for doc in m.documents:
        if doc.file.refusal:
            return doc.file.refusal
        try:
            found = attribute(doc, where, fallback)
        except ImportProblem as exc:
            return str(exc)
        if found is None:
            return (f"{doc.origin}: its supplier cannot be told (no GSTIN, VAT id, endpoint or PO "
                    f"of a known supplier, and {m.sender or 'the sender'} is no supplier's address)")
        problem = currency_problem(found, where)
        if problem is None and found.kind == CREDIT_NOTE:
            problem = credit_note_problem(found)
        if problem:
            return problem
    return None
