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
    """Push what is owed; returns how many entries this attempt sent (not found there first).
    A ledger with a `batch` size and `post_many` (Tryton) takes the entries that many at a time;
    a cancel, and any other ledger, one at a time."""
    sent = 0
    rows = list(enumerate(await postings.pending(conn, workflow_id, supplier_id, reversals), 1))
    size = getattr(ledger, "batch", 1) if not reversals and hasattr(ledger, "post_many") else 1
    if size <= 1:
        for n, row in rows:
            failpoints.hit(f"{step}_outside", n)
            sent += await _push_one(conn, ledger, fence, workflow_id, row, n, step)
        return sent
    for start in range(0, len(rows), size):
        chunk = rows[start:start + size]
        for n, _ in chunk:
            failpoints.hit(f"{step}_outside", n)
        try:
            sent += await _push_batch(conn, ledger, fence, workflow_id, chunk, step)
        except (LedgerRefused, LedgerDisagrees):
            sent += await _one_by_one(conn, ledger, fence, workflow_id, chunk, step)
    return sent


async def _push_one(conn: asyncpg.Connection, ledger: OutsideLedger, fence: Fence,
                    workflow_id: str, row: asyncpg.Record, n: int, step: str) -> int:
    """One entry, check-then-post under the fence; a refusal is recorded `failed` and raised."""
    entry = _entry(workflow_id, row)
    try:
        async with conn.transaction():
            # The worker's connections end a transaction idle for a few seconds (a frozen
            # worker must not hold a lock for long); this one waits on the ledger's answers.
            await postings.wait_for_ledger(conn, OUTSIDE_CALL_SECONDS)
            await fence.check(conn)  # FOR SHARE: held until this entry is recorded
            if not await postings.still_pending(conn, entry.key):
                return 0
            found = (await ledger.find([entry.key]))[entry.key] if ledger.looks_up else []
            if len(found) > 1 or (found and found[0].amount_paise != entry.amount_paise):
                raise _disagreement(ledger, entry, found)
            sent = 0
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
                sent = 1
            failpoints.hit(f"{step}_landed", n)  # in the ledger, not yet recorded here
            await postings.mark(conn, entry.key, postings.POSTED, outside_id)
            return sent
    except LedgerDisagrees as exc:
        await postings.mark(conn, entry.key, postings.FAILED, words=str(exc))
        raise
    except LedgerRefused as exc:
        # The ledger's words, named by the entry they refuse (a period or an account is the
        # same for many entries; the person retrying must know which one stopped).
        named = exc if entry.key in str(exc) else LedgerRefused(f"{entry.key}: {exc}")
        await postings.mark(conn, entry.key, postings.FAILED, words=str(named))
        if named is exc:
            raise
        raise named from exc


async def _push_batch(conn: asyncpg.Connection, ledger, fence: Fence, workflow_id: str,
                      chunk: list[tuple[int, asyncpg.Record]], step: str) -> int:
    """Many entries in one fenced transaction: their rows locked, all keys looked up in one
    call, the ones not there posted by one `post_many`, all recorded in one statement. The
    exactly-once argument is per key and unchanged: the fence is held (FOR SHARE) from before
    the look-up until every key of the batch is recorded, and the ledger settles each key of the
    batch by its own rule (Tryton: `_settle`). A refusal or disagreement anywhere rolls the
    batch's transaction back (nothing recorded) and is raised for `_one_by_one`."""
    entries = {row["reference"]: (n, _entry(workflow_id, row)) for n, row in chunk}
    async with conn.transaction():
        await postings.wait_for_ledger(conn, OUTSIDE_CALL_SECONDS)
        await fence.check(conn)  # FOR SHARE: held until the whole batch is recorded
        todo = await postings.still_pending_of(conn, list(entries))
        if not todo:
            return 0
        keys = [key for key in entries if key in todo]
        held = await ledger.find(keys)
        outside: dict[str, str] = {}
        new: list[Entry] = []
        for key in keys:
            entry, found = entries[key][1], held[key]
            if len(found) > 1 or (found and found[0].amount_paise != entry.amount_paise):
                raise _disagreement(ledger, entry, found)
            if found:
                outside[key] = found[0].outside_id
            else:
                new.append(entry)
        if new:
            await fence.check(conn)  # asked again right before writing, as `_push_one` does
            outside.update(zip((e.key for e in new), await ledger.post_many(new), strict=True))
        for key in keys:
            failpoints.hit(f"{step}_landed", entries[key][0])  # landed, not yet recorded here
        await postings.mark_posted(conn, outside)
        return len(new)


async def _one_by_one(conn: asyncpg.Connection, ledger: OutsideLedger, fence: Fence,
                      workflow_id: str, chunk: list[tuple[int, asyncpg.Record]], step: str) -> int:
    """A batch the ledger refused, settled entry by entry: the refused entry is recorded
    `failed` with the ledger's words naming it, every other one is posted, then the first
    refusal is raised (the step hands over naming it). A disagreement stops at once: a key
    reused with another amount is a bug, nothing more is posted."""
    sent, refused = 0, None
    for n, row in chunk:
        try:
            sent += await _push_one(conn, ledger, fence, workflow_id, row, n, step)
        except LedgerRefused as exc:
            refused = refused or exc
    if refused is not None:
        raise refused
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
