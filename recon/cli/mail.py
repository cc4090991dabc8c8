"""`recon mail`: list messages with their state, show one, or answer a refused one."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import asyncpg
from rich.console import Console
from rich.table import Table
from rich.text import Text

from recon.domain.printable import printable
from recon.mail import handovers
from recon.mail.envelope import mail_domain, message_id
from recon.mail.report import delivery
from recon.runtime.config import load_settings
from recon.store.mail_deliveries import get_message, list_messages

ACTIONS = ("show", "resend", "dismiss")
LISTED = 500  # newest messages shown when no run is named


async def mail_command(pool: asyncpg.Pool, console: Console, target: str | None,
                       key: str | None, *, by: str | None, to: str | None, note: str,
                       signing_key: Path | None = None) -> None:
    if target in ACTIONS:
        if not key:
            raise ValueError(f"`recon mail {target} KEY`: give the message's outbox key "
                             "(`recon mail RUN` lists them)")
        if target == "show":
            await _show(pool, console, key)
        else:
            console.print(printable(await _answer(pool, target, key, by=by, to=to, note=note,
                                                  signing_key=signing_key)), markup=False)
        return
    if key:
        raise ValueError(f"unexpected {key!r}: use `recon mail RUN` or `recon mail show KEY`")
    if target is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,200}", target):
        raise ValueError(f"not a run id: {target!r} (runs look like recon-2026-10-13-ldh)")
    rows = await list_messages(pool, target)
    if not rows:
        if target:
            raise LookupError(f"no messages for run {target} (see `recon mail` for all runs)")
        console.print("the outbox is empty")
        return
    rows = rows[-LISTED:]
    table = Table(title=f"Mail of {target}" if target else f"Mail (newest {len(rows)})")
    for column in ("key", "kind", "to", "state", "tries", "last error / sent"):
        table.add_column(column, overflow="fold")
    for r in rows:
        when = f"sent {r['sent_at']:%Y-%m-%d %H:%M:%S}" if r["sent_at"] else (r["last_error"] or "")
        if r["state"] == "retrying":
            when += f" (next try {r['next_attempt_at']:%H:%M:%S})"
        table.add_row(*(Text(printable(cell)) for cell in (
            r["key"], r["kind"], r["recipient"], r["state"], r["attempts"], when)))
    console.print(table)
    if target:
        console.print(printable((await delivery(pool, target)).line("Debit notes")), markup=False)


async def _answer(pool: asyncpg.Pool, action: str, key: str, *, by: str | None, to: str | None,
                  note: str, signing_key: Path | None) -> str:
    """resend or dismiss, signed with the approver key at hand and checked where it is acted on
    (recon/mail/handovers.py)."""
    from recon.cli.approvers import approver_key
    from recon.domain.errors import Refused
    from recon.domain.requests import MAIL_DISMISS, MAIL_RESEND
    from recon.ops.requests import signed_mail

    if action == "resend" and to is not None and "@" not in to:
        raise ValueError(f"--to must be an email address, got {to!r}")
    if action == "dismiss" and not note.strip():
        raise ValueError("say why (--note WHY)")
    private = approver_key(signing_key)
    if private is None:
        raise Refused(f"`recon mail {action}` is signed: set RECON_APPROVER_KEY to your approver "
                      "key or pass --key PATH")
    max_age = timedelta(seconds=load_settings().decision_max_age_seconds)
    if action == "resend":
        signed = await signed_mail(pool, private, MAIL_RESEND, outbox_key=key, to=to, note=note,
                                   by=by)
        return await handovers.resend(pool, key, signed, to, note, max_age)
    signed = await signed_mail(pool, private, MAIL_DISMISS, outbox_key=key, to=None, note=note,
                               by=by)
    return await handovers.dismiss(pool, key, signed, note, max_age)


async def _show(pool: asyncpg.Pool, console: Console, key: str) -> None:
    row = await get_message(pool, key)
    if row is None:
        raise LookupError(f"no message {key!r} in the outbox (see `recon mail`)")
    domain = mail_domain(load_settings().mail_from)
    lines = [
        f"To: {row['recipient']}",
        f"Subject: {row['subject']}",
        f"Message-ID: {row['message_id'] or message_id(row['key'], domain)}",
        f"Idempotency-Key: {row['key']}",
        f"State: {row['state']} after {row['attempts']} attempt(s)"
        + (f", sent {row['sent_at']:%Y-%m-%d %H:%M:%S}" if row["sent_at"] else "")
        + (f", refused {row['failed_at']:%Y-%m-%d %H:%M:%S}" if row["failed_at"] else ""),
    ]
    if row["last_error"]:
        lines.append(f"Last error: {row['last_error']}")
    if row["body_html"]:
        lines.append("(also has an HTML part)")
    # supplier names, addresses and the server's reply are data: shown, never obeyed
    console.print(printable("\n".join(lines) + "\n\n" + row["body"], keep_newlines=True),
                  markup=False, highlight=False)
