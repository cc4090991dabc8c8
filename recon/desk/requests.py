"""Signed requests on the desk: undo a night or one supplier of it, redo what an undo took back,
resend or dismiss a message the mail server refused. Signed "the same way" as a decision: a fresh
passkey assertion whose challenge is the SHA-256 of the request's canonical form
(recon.domain.requests, the bytes `recon undo|redo|mail` sign with Ed25519), the signer being the
signed-in approver and the time the desk's clock.

The desk checks nothing that counts: it asks what the CLI asks before a person signs (is there
anything to undo, is the message refused), so nobody is asked to sign what will be refused, then
hands the signed request to where the CLI hands it: the undo or redo workflow, whose
`check_signed_request` activity judges it in Postgres, or the mail transaction
(recon/mail/bounces.py). Both check a passkey with the one check decisions use
(recon.store.passkeys.passkey_problem): the approver's passkey on record, the counter, their limit,
one use per signature. An assertion made for one night, supplier or message is a signature of
that request only: anywhere else it does not verify.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
from temporalio.client import Client, WorkflowFailureError

from recon.domain.decisions import signing_time
from recon.domain.errors import NotRefused, Refusal, Refused
from recon.domain.models import PasskeyProof
from recon.domain.passkeys import RelyingParty
from recon.domain.requests import (
    MAIL_DISMISS,
    MAIL_RESEND,
    REDO,
    UNDO,
    SignedRequest,
    canonical_mail,
    canonical_request,
)
from recon.runtime.config import Settings
from recon.store import bounces, mail_deliveries

KINDS = {"undo": UNDO, "redo": REDO, "resend": MAIL_RESEND, "dismiss": MAIL_DISMISS}
MAX_TEXT = 500  # a reason or a note, as `recon undo --reason` / `recon mail --note` keep them
REDO_WAIT_SECONDS = 30.0  # a redo's answer on the page; longer, it is reported as running


class RequestRefused(Refusal, ValueError):
    """One line for the page."""


def _text(body: dict, name: str, limit: int = MAX_TEXT) -> str:
    value = body.get(name)
    text = value.strip() if isinstance(value, str) else ""
    if len(text) > limit:
        raise RequestRefused(f"the {name} is at most {limit} characters")
    return text


def _optional(body: dict, name: str) -> str | None:
    return _text(body, name, 200) or None


def fields_of(body: dict, signed_at: str | None = None) -> dict:
    """The request as it will be signed, from the page's form: its kind, what it names, why, and
    the time it is signed at (now, or as signed when the assertion comes back); the signer is
    the session's approver, added by the caller."""
    kind = body.get("kind")
    if kind not in KINDS:
        raise RequestRefused(f"choose one of {', '.join(KINDS)}")
    signed_at = signed_at or signing_time(datetime.now(UTC))
    if kind in ("undo", "redo"):
        reason = _text(body, "reason")
        if not reason:
            raise RequestRefused(f"say why (the {kind}'s reason goes on record)")
        return {"kind": kind, "run": _text(body, "run", 200), "supplier": _optional(body, "supplier"),
                "reason": reason, "signed_at": signed_at}
    note, to = _text(body, "note"), _optional(body, "to")
    if kind == "dismiss" and not note:
        raise RequestRefused("say why the message is dismissed (the note)")
    if kind == "resend" and to is not None and "@" not in to:
        raise RequestRefused(f"not an email address: {to!r}")
    return {"kind": kind, "key": _text(body, "key", 300), "to": to if kind == "resend" else None,
            "note": note, "signed_at": signed_at}


def canonical_of(fields: dict, by: str) -> bytes:
    """The bytes the passkey signs: exactly what the CLI signs for the same request."""
    purpose = KINDS[fields["kind"]]
    if purpose in (UNDO, REDO):
        return canonical_request(purpose, run=fields["run"], supplier=fields["supplier"],
                                 references=[], reason=fields["reason"], by=by,
                                 signed_at=fields["signed_at"])
    return canonical_mail(purpose, key=fields["key"], to=fields["to"], note=fields["note"], by=by,
                          signed_at=fields["signed_at"])


async def facts(pool: asyncpg.Pool, run: str) -> dict:
    """What the page of a night's requests lists: its suppliers (live and undone entries) and
    its messages the mail server refused, with whether a person still has to answer them."""
    from recon.store.undo import suppliers_of_night

    refused = [m for m in await mail_deliveries.list_messages(pool, run) if m["state"] == "failed"]
    waiting = {h["outbox_key"] for h in await bounces.handovers_of(pool, run)
               if h["decision"] is None}
    return {"suppliers": await suppliers_of_night(pool, run),
            "refused": [{"key": m["key"], "kind": m["kind"], "recipient": m["recipient"],
                         "error": m["last_error"], "open": m["key"] in waiting} for m in refused]}


async def ask(pool: asyncpg.Pool, client: Client, fields: dict) -> None:
    """What the CLI refuses before anyone signs, refused here the same way (one line)."""
    from recon.ops.redo import plan_redo
    from recon.ops.undo import describe_plan

    kind = fields["kind"]
    if kind == "undo":
        await describe_plan(client, pool, fields["run"], fields["supplier"], [])
    elif kind == "redo":
        await plan_redo(client, pool, fields["run"], fields["supplier"])
    else:
        row = await mail_deliveries.get_message(pool, fields["key"])
        if row is None:
            raise LookupError(f"no message {fields['key']!r} in the outbox")
        if kind == "resend" and row["failed_at"] is None:
            raise NotRefused(f"message {fields['key']} was not refused ({row['state']}): "
                             "nothing to resend")
        if kind == "dismiss" and not await bounces.is_open(pool, fields["key"]):
            raise LookupError(f"no open delivery handover for {fields['key']!r}")


async def act(pool: asyncpg.Pool, client: Client, settings: Settings, party: RelyingParty,
              fields: dict, by: str, signature: str, proof: PasskeyProof) -> str:
    """Hand the signed request to where it is checked and acted on; its one line."""
    from recon.mail import bounces as answers
    from recon.ops.redo import start_redo
    from recon.ops.undo import start_undo

    signed = SignedRequest(by=by, signed_at=fields["signed_at"], signature=signature,
                           passkey=proof)
    kind = fields["kind"]
    if kind == "undo":
        lines = await start_undo(client, pool, settings, fields["run"], fields["supplier"], [],
                                 fields["reason"], signed)
        return " ".join(line.strip() for line in lines)
    if kind == "redo":
        handle, ledger, stock, generation = await start_redo(
            client, pool, settings, fields["run"], fields["supplier"], fields["reason"], signed)
        try:
            summary = await asyncio.wait_for(handle.result(), REDO_WAIT_SECONDS)
        except TimeoutError:
            return (f"redo {handle.id} started ({ledger} ledger entries and {stock} stock "
                    f"movements to post again, generation {generation}): still running; it may "
                    f"wait for a decision (see the nights)")
        except WorkflowFailureError as exc:
            raise Refused(f"redo {handle.id} refused: {exc.cause}") from None
        return (f"redo {handle.id} finished: {summary.ledger_posted} live ledger entries in "
                f"{fields['run']}, {summary.adjustments_in_words()}")
    max_age = timedelta(seconds=settings.decision_max_age_seconds)
    if kind == "resend":
        return await answers.resend(pool, fields["key"], signed, fields["to"], fields["note"],
                                    max_age, party)
    return await answers.dismiss(pool, fields["key"], signed, fields["note"], max_age, party)
