"""What an SMTP error means for a message, and the handover a refused supplier note opens.

Temporary (try again later, same message): a 4xx reply, no connection, a timeout, a login or
TLS problem (that is our configuration, not the message's fault), the server refusing our sender
address. Permanent for this message (park it with the server's reply): a 5xx to the recipient
or to the message itself.

A refused debit note or withdrawal opens a *delivery handover*. Rule: it never reopens the run.
By the time a note bounces the run has usually finished, and its ledger and stock are right
whether or not the supplier read the mail; what is missing is that the supplier was told. So the
handover lives in Postgres (`mail_handovers`), is mailed to the finance head, is listed by
`recon handovers` and shown by `recon handover RUN`, and is answered with `recon mail resend`
(after fixing the address) or `recon mail dismiss` (the supplier was told another way).
"""

from __future__ import annotations

from dataclasses import dataclass

import aiosmtplib
import asyncpg

from recon.mail.documents import claim_number, withdrawal_number
from recon.store import bounces
from recon.store.outbox import Message, enqueue

SUPPLIER_FACING = ("debit-note", "withdrawal")


@dataclass(frozen=True)
class Failure:
    permanent: bool
    reply: str


class Unbuildable(Exception):
    """The outbox row cannot be made into a message (a header with a line break, say): permanent
    for that row, as a 5xx is."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"the message cannot be built: {type(cause).__name__}: {cause}")


def classify(exc: BaseException) -> Failure:
    if isinstance(exc, Unbuildable):
        return Failure(True, repr(str(exc))[1:-1][:500])  # one line: control characters escaped
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused) and exc.recipients:
        first = exc.recipients[0]
        return Failure(500 <= first.code < 600, f"{first.code} {first.message} ({first.recipient})")
    if isinstance(exc, aiosmtplib.SMTPSenderRefused | aiosmtplib.SMTPAuthenticationError
                  | aiosmtplib.SMTPHeloError):
        return Failure(False, f"{exc.code} {exc.message} (check SMTP_URL / RECON_MAIL_FROM)")
    if isinstance(exc, aiosmtplib.SMTPRecipientRefused | aiosmtplib.SMTPDataError):
        return Failure(500 <= exc.code < 600, f"{exc.code} {exc.message}")
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        return Failure(False, f"{exc.code} {exc.message}")
    return Failure(False, f"{type(exc).__name__}: {exc}"[:500])


def _what(row: asyncpg.Record) -> str:
    if row["kind"] == "withdrawal":
        return f"withdrawal {withdrawal_number(row['key'], row['reverses'])}"
    return f"debit note {claim_number(row['key'])}"


async def open_delivery_handover(conn: asyncpg.Connection, row: asyncpg.Record, reply: str,
                                 finance_head_email: str) -> int | None:
    """Record the handover and queue its note, in the caller's transaction (the one that parks
    the message), so a refused note and its handover exist together or not at all."""
    what = _what(row)
    supplier = row["supplier_id"] or "?"
    note = (
        f"Run {row['workflow_id']}: the mail server refused {what} to supplier {supplier} "
        f"<{row['recipient']}>.\n"
        f"Server reply: {reply}\n"
        f"Outbox key: {row['key']}\n"
        "The run's ledger and stock stand; the supplier has not been told.\n"
        f"Next: fix the address and `recon mail resend {row['key']} --by NAME [--to ADDRESS]`,\n"
        f"or, if the supplier was told another way, `recon mail dismiss {row['key']} --by NAME "
        "--note WHY`.\n"
    )
    handover_id = await bounces.open_handover(conn, row["key"], row["workflow_id"], reply,
                                                     note)
    if handover_id is None:
        return None
    await enqueue(conn, Message(
        key=f"{row['key']}:undeliverable:{handover_id}", workflow_id=row["workflow_id"],
        kind="handover", recipient=finance_head_email,
        subject=f"Decision needed: {what} to {supplier} was refused", body=note,
    ))
    return handover_id
