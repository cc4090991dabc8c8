"""`recon approvers add|list|revoke|passkey|passkeys|revoke-passkey`: the people whose signed
decisions runs take, and their passkeys."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from recon.cli.common import console, database, user_errors
from recon.domain.errors import Refused
from recon.domain.money import parse_rupees, rupees
from recon.domain.printable import printable

app = typer.Typer(help="Approvers: who may decide, with which key, up to how much.",
                  no_args_is_help=True, add_completion=False)

KeyOption = Annotated[Path | None, typer.Option(
    "--key", help="An admin's private key (default: RECON_APPROVER_KEY).")]


def approver_key(path: Path | None):
    """The key of the person at the keyboard: --key, else RECON_APPROVER_KEY, else none."""
    from recon.ops.approvers import load_key
    from recon.runtime.config import load_settings

    chosen = path or (Path(k) if (k := load_settings().approver_key) else None)
    return None if chosen is None else load_key(chosen)


@app.command()
@user_errors
def add(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    email: Annotated[str, typer.Option(help="Where the approver is reached.")],
    role: Annotated[str, typer.Option(help="approver | admin (admins add and revoke)")],
    limit: Annotated[str | None, typer.Option(
        help="The most one decision of theirs may put at stake, in rupees (default: none).")] = None,
    key_file: Annotated[Path | None, typer.Option(
        help="Make a key pair; write the private key here (mode 0600, never overwritten).")] = None,
    public_key: Annotated[Path | None, typer.Option(
        help="Register this Ed25519 public key (PEM) the person made instead.")] = None,
    key: KeyOption = None,
    passkey: Annotated[bool, typer.Option(
        "--passkey", help="Print a one-time link to register a passkey on the desk.")] = False,
) -> None:
    """Put an approver on record with an Ed25519 public key, a passkey, or both."""
    from recon.ops.approvers import add_approver
    from recon.ops.passkeys import ENROLLMENT_VALID_FOR, enrollment_link
    from recon.runtime.config import load_settings

    limit_paise = None if limit is None else parse_rupees(limit)

    async def go():
        async with database() as pool:
            person = await add_approver(
                pool, name, email, role, limit_paise, key_file=key_file,
                public_key_file=public_key, admin_key=approver_key(key), passkey=passkey)
            link = await enrollment_link(pool, person.name, load_settings().desk_origin) \
                if passkey else None
            return person, link

    person, link = asyncio.run(go())
    where = f"; private key in {key_file} (keep it to yourself)" if key_file else ""
    console.print(printable(
        f"approver {person.name} ({person.role}, limit "
        f"{'none' if person.limit_paise is None else rupees(person.limit_paise)}) added{where}"),
        markup=False, highlight=False)
    if link:
        hours = int(ENROLLMENT_VALID_FOR.total_seconds() // 3600)
        console.print(f"passkey enrollment link for {person.name} (one use, {hours} h): {link}",
                      markup=False, highlight=False, soft_wrap=True)


@app.command("list")
@user_errors
def list_() -> None:
    """Every approver on record, active first."""
    from recon.domain.signing import fingerprint
    from recon.store.approvers import all_approvers
    from recon.store.passkeys import counts

    async def go():
        async with database() as pool:
            return await all_approvers(pool), await counts(pool)

    people, passkeys = asyncio.run(go())
    if not people:
        console.print("no approver on record: recon approvers add NAME --email E --role admin "
                      "--key-file PATH")
        return
    table = Table(title="Approvers")
    for column in ("name", "email", "role", "limit", "key", "passkeys", "added", "revoked"):
        table.add_column(column)
    for p in people:
        table.add_row(*(Text(printable(cell)) for cell in (
            p.name, p.email, p.role, "none" if p.limit_paise is None else rupees(p.limit_paise),
            fingerprint(p.public_key) if p.public_key else "none",
            str(passkeys.get(p.name, 0)), f"{p.added_at:%Y-%m-%d %H:%M}",
            f"{p.revoked_at:%Y-%m-%d %H:%M}" if p.revoked_at else "")))
    console.print(table)


@app.command()
@user_errors
def passkey(name: Annotated[str, typer.Argument(metavar="NAME")], key: KeyOption = None) -> None:
    """Print a new one-time link for NAME to register a passkey on the desk (an admin's act)."""
    from recon.ops.approvers import passkey_link
    from recon.ops.passkeys import ENROLLMENT_VALID_FOR
    from recon.runtime.config import load_settings

    async def go():
        async with database() as pool:
            return await passkey_link(pool, name, approver_key(key), load_settings().desk_origin)

    link = asyncio.run(go())
    hours = int(ENROLLMENT_VALID_FOR.total_seconds() // 3600)
    console.print(f"passkey enrollment link for {name} (one use, {hours} h): {link}",
                  markup=False, highlight=False, soft_wrap=True)


@app.command()
@user_errors
def revoke(name: Annotated[str, typer.Argument(metavar="NAME")], key: KeyOption = None) -> None:
    """End an approver's authority: their signatures are refused from now on."""
    from recon.ops.approvers import revoke_approver

    async def go():
        async with database() as pool:
            return await revoke_approver(pool, name, approver_key(key))

    revoked = asyncio.run(go())
    console.print(printable(f"approver {name} revoked at {revoked:%Y-%m-%d %H:%M:%S %Z}"),
                  markup=False, highlight=False)


@app.command()
@user_errors
def passkeys(name: Annotated[str, typer.Argument(metavar="NAME")]) -> None:
    """NAME's passkeys (revoked ones too): credential id, when registered, what it signed."""
    from recon.domain.passkeys import b64url
    from recon.store.approvers import by_name
    from recon.store.passkeys import listed

    async def go():
        async with database() as pool:
            return await by_name(pool, name), await listed(pool, name)

    person, keys = asyncio.run(go())
    if person is None:
        raise Refused(f"no approver {name!r} on record")
    if not keys:
        console.print(printable(f"{name} holds no passkey: `recon approvers passkey {name}` "
                                f"prints a link to register one"), markup=False, highlight=False)
        return
    table = Table(title=printable(f"Passkeys of {name}"))
    for column in ("credential", "registered", "counter", "signed", "last signed", "revoked"):
        table.add_column(column, overflow="fold")
    for k in keys:
        table.add_row(*(Text(printable(cell)) for cell in (
            b64url(k["credential_id"]), f"{k['created_at']:%Y-%m-%d %H:%M}", str(k["sign_count"]),
            str(k["signed"]), f"{k['last_signed']:%Y-%m-%d %H:%M}" if k["last_signed"] else "",
            f"{k['revoked_at']:%Y-%m-%d %H:%M}" if k["revoked_at"] else "")))
    console.print(table)


@app.command("revoke-passkey")
@user_errors
def revoke_passkey(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    credential: Annotated[str, typer.Argument(
        metavar="CREDENTIAL", help="Its credential id as `recon approvers passkeys NAME` shows "
                                   "it, or a unique start of it (6 characters or more).")],
    key: KeyOption = None,
) -> None:
    """Revoke one of NAME's passkeys (a lost device): it signs in and signs no more; the approver
    and their other keys stay (an admin's act)."""
    from recon.ops.approvers import revoke_passkey as revoke

    async def go():
        async with database() as pool:
            return await revoke(pool, name, credential, approver_key(key))

    chosen, revoked = asyncio.run(go())
    console.print(printable(f"passkey {chosen} of {name} revoked at {revoked:%Y-%m-%d %H:%M:%S %Z}"),
                  markup=False, highlight=False, soft_wrap=True)
