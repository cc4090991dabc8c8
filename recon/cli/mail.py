"""`recon mail list|show|resend|dismiss`: the outbox as mail, as a typer sub-app.

`list [RUN]` shows each message with its state, `show KEY` one message in full, `resend KEY` and
`dismiss KEY` answer a bounce (a supplier note the mail server refused), signed with the approver
key. The old spellings keep working: `recon mail` lists every run's messages and `recon mail RUN`
one run's, because a first word that is no sub-command is read as `list`'s RUN.
"""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import asyncpg
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from recon.cli.common import console, database, user_errors
from recon.domain.errors import Refused
from recon.domain.printable import printable
from recon.domain.wording import count
from recon.mail import bounces
from recon.mail.envelope import mail_domain, message_id
from recon.mail.report import delivery
from recon.runtime.config import load_settings
from recon.store.mail_deliveries import get_message, list_messages

LISTED = 500  # newest messages shown when no run is named


class _ListByDefault(TyperGroup):
    """`recon mail RUN` (the spelling before the sub-commands) is `recon mail list RUN`."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["list", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_ListByDefault, invoke_without_command=True, no_args_is_help=False,
                  help="The outbox as mail: list messages, show one, answer a bounce.")

KeyArg = Annotated[str | None, typer.Argument(metavar="KEY", help="The message's outbox key.",
                                               show_default=False)]
ByOpt = Annotated[str | None, typer.Option(
    help="Must be the owner of the key (default: the key's owner).")]
NoteOpt = Annotated[str, typer.Option(help="Why, for the record.")]
SigningKeyOpt = Annotated[Path | None, typer.Option(
    "--key", help="Your approver key (default: RECON_APPROVER_KEY).")]


@app.callback()
def _mail(ctx: typer.Context) -> None:
    """With no sub-command, `recon mail` lists the newest messages of every run."""
    if ctx.invoked_subcommand is None:
        list_(None)


@app.command("list")
@user_errors
def list_(run_id: Annotated[str | None, typer.Argument(
        metavar="[RUN]", help="A run to list its messages (all runs if omitted).")] = None) -> None:
    """Each message with its state: queued, retrying, delivered or failed."""
    _in_pool(lambda pool: _list(pool, console, run_id))


@app.command()
@user_errors
def show(key: KeyArg = None) -> None:
    """One message in full: headers, state, the server's last answer and the body."""
    _in_pool(lambda pool: _show(pool, console, _key("show", key)))


@app.command()
@user_errors
def resend(key: KeyArg = None, by: ByOpt = None,
           to: Annotated[str | None, typer.Option(help="A corrected address.")] = None,
           note: NoteOpt = "", signing_key: SigningKeyOpt = None) -> None:
    """Send a bounced message again (to a corrected address), signed with your approver key."""
    _answer_bounce("resend", key, by=by, to=to, note=note, signing_key=signing_key)


@app.command()
@user_errors
def dismiss(key: KeyArg = None, by: ByOpt = None, note: NoteOpt = "",
            signing_key: SigningKeyOpt = None) -> None:
    """Close a bounce without sending (the supplier was told another way), signed; --note says why."""
    _answer_bounce("dismiss", key, by=by, to=None, note=note, signing_key=signing_key)


def _answer_bounce(action: str, key: str | None, *, by: str | None, to: str | None, note: str,
                   signing_key: Path | None) -> None:
    if by is not None and not by.strip():
        raise Refused("say who decides (--by NAME), or leave --by out: the key says who")
    checked = _key(action, key)

    async def go(pool: asyncpg.Pool) -> None:
        console.print(printable(await _answer(pool, action, checked, by=by, to=to, note=note,
                                              signing_key=signing_key)), markup=False)

    _in_pool(go)


def _key(action: str, key: str | None) -> str:
    if not key:
        raise ValueError(f"`recon mail {action} KEY`: give the message's outbox key "
                         "(`recon mail list RUN` lists them)")
    return key


def _in_pool(work) -> None:
    async def go() -> None:
        async with database() as pool:
            await work(pool)

    asyncio.run(go())


async def _list(pool: asyncpg.Pool, console: Console, target: str | None) -> None:
    if target is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,200}", target):
        raise ValueError(f"not a run id: {target!r} (runs look like recon-2026-10-13-ldh)")
    rows = await list_messages(pool, target)
    if not rows:
        if target:
            raise LookupError(f"no messages for run {target} (see `recon mail list` for all runs)")
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
    (recon/mail/bounces.py)."""
    from recon.cli.approvers import approver_key
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
        return await bounces.resend(pool, key, signed, to, note, max_age)
    signed = await signed_mail(pool, private, MAIL_DISMISS, outbox_key=key, to=None, note=note,
                               by=by)
    return await bounces.dismiss(pool, key, signed, note, max_age)


async def _show(pool: asyncpg.Pool, console: Console, key: str) -> None:
    row = await get_message(pool, key)
    if row is None:
        raise LookupError(f"no message {key!r} in the outbox (see `recon mail list`)")
    domain = mail_domain(load_settings().mail_from)
    lines = [
        f"To: {row['recipient']}",
        f"Subject: {row['subject']}",
        f"Message-ID: {row['message_id'] or message_id(row['key'], domain)}",
        f"Idempotency-Key: {row['key']}",
        f"State: {row['state']} after {count(row['attempts'], 'attempt')}"
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
