"""The outside-ledger pusher, beside its port: step 7 and the undo each call it once
(`post_run`, `cancel_run`). After the built-in insert, each entry owed to the other system is
pushed there one at a time, check-then-post, inside a transaction that holds the run's fence
(FOR SHARE on the fence row, as every ledger write does): a newer attempt taking the fence waits
for the entry in flight to be recorded, and a stale attempt woken later finds its token stale and
sends nothing.

A crashed attempt cannot see whether its last call landed, so for a ledger that only lets you look
up (Tryton) every entry is looked up by its key first; a ledger that enforces a key answers a
repeat with its first answer. What the ledger refuses is recorded as `failed` with its words (the
entry stays owed, nothing is lost) and the step hands over naming them.

Every SQL statement it needs is in recon/store/ledger_postings.py and recon/store/fences.py.
"""

from __future__ import annotations

from datetime import date

import asyncpg

from recon.domain.errors import VerificationFailed
from recon.domain.keys import night_of
from recon.domain.money import amount
from recon.ledger.port import Entry, LedgerDisagrees, LedgerRefused, OutsideLedger
from recon.runtime import failpoints
from recon.store import ledger_postings as postings
from recon.store.fences import Fence


def _business_date(workflow_id: str, posted_on: date) -> date:
    night = night_of(workflow_id)
    return date.fromisoformat(night[0]) if night else posted_on


TAX_PARTS = ("cgst", "sgst", "igst", "cess", "vat")

# How long one entry's transaction may sit idle while the ledger answers: its look-up, create and
# post (30 s each at most). A takeover waits at most this long for a frozen attempt's entry.
OUTSIDE_CALL_SECONDS = 100


async def post_run(conn: asyncpg.Connection, ledger: OutsideLedger, fence: Fence,
                   workflow_id: str, supplier_id: str | None, step: str) -> int:
    """Step 7: every live entry of the run (in scope) owed to the ledger, pushed there and then
    checked there. Returns how many entries this attempt sent."""
    await postings.enqueue_live(conn, workflow_id, supplier_id, ledger.name)
    sent = await push(conn, ledger, fence, workflow_id, supplier_id, reversals=False, step=step)
    await verify_outside(conn, ledger, workflow_id, supplier_id)
    return sent


async def cancel_run(conn: asyncpg.Connection, ledger: OutsideLedger, fence: Fence,
                     workflow_id: str, supplier_id: str | None, references: list[str],
                     step: str) -> int:
    """The undo: each reversal (of `references`) whose original reached the ledger cancels it
    there, the ledger's way, keyed `undo:{key}`. Returns how many this attempt sent."""
    await postings.enqueue_reversals(conn, workflow_id, references, ledger.name)
    return await push(conn, ledger, fence, workflow_id, supplier_id, reversals=True, step=step)


def _entry(workflow_id: str, row: asyncpg.Record) -> Entry:
    taxes = tuple((part, row[f"{part}_paise"]) for part in TAX_PARTS if row[f"{part}_paise"])
    return Entry(key=row["reference"], amount_paise=row["amount_paise"],
                 supplier_id=row["supplier_id"], invoice_no=row["invoice_no"],
                 line_no=row["line_no"], memo=row["memo"] or "",
                 business_date=_business_date(workflow_id, row["posted_on"]),
                 reverses=row["reverses"], taxable_paise=row["taxable_paise"], taxes=taxes,
                 currency=row["currency"], supplier_name=row["supplier_name"] or "",
                 supplier_gstin=row["supplier_gstin"])


def _disagreement(ledger: OutsideLedger, entry: Entry, found) -> LedgerDisagrees:
    held = ", ".join(f"{f.outside_id} with {amount(f.amount_paise, entry.currency)}" for f in found)
    return LedgerDisagrees(
        f"{ledger.name} holds key {entry.key} as {held}; recon's entry {entry.key} is "
        f"{amount(entry.amount_paise, entry.currency)} ({entry.invoice_no} line {entry.line_no}, "
        f"{entry.supplier_id}): a key reused with another amount is a bug, nothing more is posted")


async def push(conn: asyncpg.Connection, ledger: OutsideLedger, fence: Fence, workflow_id: str,
               supplier_id: str | None, *, reversals: bool, step: str) -> int:
    """Push what is owed; returns how many entries this attempt sent (not found there first)."""
    sent = 0
    rows = await postings.pending(conn, workflow_id, supplier_id, reversals)
    for n, row in enumerate(rows, 1):
        entry = _entry(workflow_id, row)
        failpoints.hit(f"{step}_outside", n)
        try:
            async with conn.transaction():
                # The worker's connections end a transaction idle for a few seconds (a frozen
                # worker must not hold a lock for long); this one waits on the ledger's answers.
                await postings.wait_for_ledger(conn, OUTSIDE_CALL_SECONDS)
                await fence.check(conn)  # FOR SHARE: held until this entry is recorded
                if not await postings.still_pending(conn, entry.key):
                    continue
                found = (await ledger.find([entry.key]))[entry.key] if ledger.looks_up else []
                if len(found) > 1 or (found and found[0].amount_paise != entry.amount_paise):
                    raise _disagreement(ledger, entry, found)
                if found:
                    outside_id = found[0].outside_id
                else:
                    # Asked again right before writing to the ledger: a look-up that took long
                    # may have outlived the transaction holding the fence. A pause after this
                    # check is the ledger's to survive: Tryton posts only the lowest move of a
                    # key (its adapter's `_settle`); a key-enforcing ledger answers a repeat
                    # with its first answer.
                    await fence.check(conn)
                    if entry.reverses:
                        outside_id = await ledger.cancel(entry, row["original_id"])
                    else:
                        outside_id = await ledger.post(entry)
                    sent += 1
                failpoints.hit(f"{step}_landed", n)  # in the ledger, not yet recorded here
                await postings.mark(conn, entry.key, postings.POSTED, outside_id)
        except (LedgerRefused, LedgerDisagrees) as exc:
            await postings.mark(conn, entry.key, postings.FAILED, words=str(exc))
            raise
    return sent


async def verify_outside(conn: asyncpg.Connection, ledger: OutsideLedger, workflow_id: str,
                         supplier_id: str | None) -> int:
    """Step 7's closing check, asked of the outside ledger: every live entry's key is there
    exactly once, with the same amount. A key held with another amount is a disagreement (a
    handover naming both); a missing or doubled one fails the check."""
    rows = await postings.to_verify(conn, workflow_id, supplier_id)
    if not ledger.looks_up:
        # A key-enforcing ledger is asked by posting again: the same key and body are answered
        # with the first response (its id), another body with 422.
        for row in rows:
            answered = await ledger.post(_entry(workflow_id, row))
            if answered != row["outside_id"]:
                raise VerificationFailed(
                    f"{ledger.name} answered key {row['reference']} with id {answered}, recon "
                    f"recorded {row['outside_id']}")
        await postings.mark_verified(conn, [r["reference"] for r in rows])
        return len(rows)
    missing, doubled, verified = [], [], []
    for start in range(0, len(rows), 500):
        chunk = rows[start:start + 500]
        held = await ledger.find([r["reference"] for r in chunk])
        for row in chunk:
            found = held[row["reference"]]
            if any(f.amount_paise != row["amount_paise"] for f in found):
                wrong = [f for f in found if f.amount_paise != row["amount_paise"]]
                held_words = ", ".join(f"{f.outside_id} with {amount(f.amount_paise, row['currency'])}"
                                       for f in wrong)
                raise LedgerDisagrees(
                    f"{ledger.name} holds key {row['reference']} as {held_words}; recon's entry is "
                    f"{amount(row['amount_paise'], row['currency'])}: the ledger's check fails, a "
                    "person must look")
            if not found:
                missing.append(row["reference"])
            elif len(found) > 1:
                doubled.append(row["reference"])
            else:
                verified.append(row["reference"])
    if missing or doubled:
        raise VerificationFailed(
            f"{ledger.name} check for {workflow_id}: {len(missing)} missing, {len(doubled)} posted "
            f"twice, of {len(rows)} expected (first: {(missing + doubled)[0]})")
    await postings.mark_verified(conn, verified)
    return len(rows)
