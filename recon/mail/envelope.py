"""An outbox row as an email. Everything comes from the row, so a repeat is byte-for-byte the same
message: the same `Message-ID` (derived from the outbox key), the same `Idempotency-Key` (the key
itself), the same `Date` (when the row was queued). A receiving system that tracks either header
drops the repeat; a person sees the same claim number twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from typing import Any

from recon.domain.printable import neutral
from recon.domain.redaction import mask_known


def mail_domain(mail_from: str) -> str:
    address = parseaddr(mail_from)[1]
    return address.rpartition("@")[2] or "recon.invalid"


def message_id(key: str, domain: str) -> str:
    """`<{sha256(key)[:32]}@{domain}>`: stable for the key, and no internal ids in the header."""
    return f"<{hashlib.sha256(key.encode()).hexdigest()[:32]}@{domain}>"


def build_email(row: Mapping[str, Any], mail_from: str, *, subject: str | None = None,
                text: str | None = None, html: str | None = None) -> EmailMessage:
    """The row as a message; `subject`/`text`/`html` replace the stored ones (the summary is
    rendered again as it leaves)."""
    domain = mail_domain(mail_from)
    msg = EmailMessage()
    msg["From"] = mail_from
    msg["To"] = row["recipient"]
    msg["Subject"] = neutral(mask_known(subject or row["subject"]))
    msg["Date"] = format_datetime(row["created_at"])
    msg["Message-ID"] = message_id(row["key"], domain)
    msg["Idempotency-Key"] = row["key"]
    if row.get("reverses"):  # a withdrawal answers the note it withdraws, in mail clients too
        msg["In-Reply-To"] = message_id(row["reverses"], domain)
        msg["References"] = message_id(row["reverses"], domain)
    # no secret of this process leaves in a mail, whatever the row holds (redaction.py)
    # ... and no control or bidi character: shown as an escape (`\x1b`, `\u202e`)
    msg.set_content(neutral(mask_known(text if text is not None else row["body"])))
    html = html if html is not None else row.get("body_html")
    if html:
        msg.add_alternative(neutral(mask_known(html)), subtype="html")
    return msg
