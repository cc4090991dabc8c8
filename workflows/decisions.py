"""Decisions on a run that waits for a person, from the workflow's side: the rules of a handover
and the desk that takes a decision (docs/design.md §3).

The rules are pure functions of what the run knows: which decision can be taken, how a failed
step is described to a person, how many attempts it made, when the next morning reminder is due.
They decide nothing else, read no clock of their own and do no I/O, so they are safe in workflow
code.

NightlyReconciliation's `decide` Update and `decide_signal` both come to the desk once the cheap
checks of the validator (`why_not`: the pending handover, shape, lengths) have passed. The desk
asks the `check_decision` activity (activities/decisions.py) whether the signature verifies
against an active approver in Postgres, how much money the decision puts at stake, and whether it
is within the approver's limit; only then is the decision taken. A refused decision leaves the
run waiting; it is on record in Postgres (`refused_decisions`, written by the activity) and, for
a signal, among the run's ignored decisions (memo: the last few and a count).

Four eyes (RECON_FOUR_EYES_PAISE): the first approval above the amount is kept here as pending;
it is taken when a second, different approver signs the same decision and park list.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.decisions import DecisionActivities
    from recon.domain import decisions
    from recon.domain.models import DECISIONS, Decision, HandoverNote, IgnoredDecision, RecordedDecision
    from recon.domain.money import rupees
    from recon.domain.passkeys import (
        PasskeyRefused,
        challenge_of,
        signature_bytes,
        unb64url,
        verify_assertion,
    )
    from recon.domain.requests import signature_digest
    from recon.domain.signing import verifies
    from workflows.patches import BOUNDED_IGNORED, DECISIONS_ON_RECORD, PASSKEYS_PAST_CAP, REFUSALS_NEVER_LOCK
    from workflows.policies import READ_TIMEOUT, RETRY


# Past the cap, a decision from a name the run's copy of the keys does not hold reads the keys
# again, at most this often (an approver registered during a flood is heard within this time).
KEYS_FRESH_FOR = timedelta(minutes=5)

GATE_NEXT_ACTION = ("send the debit notes (resume), check the evidence again (retry), "
                    "or undo the run (undo)")


def why_not(d: Decision, pending_note: HandoverNote | None, taken: Decision | None,
            decided: list[RecordedDecision], workflow_id: str) -> str | None:
    """Why a decision cannot be taken, or None. A decision names the handover it answers:
    one for any other handover (an old one, or one nobody has read yet) is refused."""
    if pending_note is None:
        if decided:
            last = decided[-1]
            return (f"handover #{last.handover_no} was already decided: {last.decision} "
                    f"by {last.by}; no handover is pending now")
        return "no handover is pending for this run"
    pending = pending_note.handover_no
    if d.handover_no != pending:
        if not d.handover_no:
            return f"say which handover you answer: --handover {pending} is pending"
        return (f"handover #{d.handover_no} is not the pending one: #{pending} is "
                f"(read it with `recon handover {workflow_id}`)")
    if taken is not None:
        return f"handover #{pending} was already decided"
    if d.decision not in DECISIONS:
        return f"unknown decision {d.decision!r}: use one of {', '.join(DECISIONS)}"
    if not d.by.strip():
        return "say who decides (--by NAME)"
    bounds = out_of_bounds(d)
    if bounds:
        return bounds
    if d.park and d.decision == "undo":
        return "--park goes with resume or retry: an undo reverses the whole run anyway"
    if d.park and not d.note.strip():
        return "say why these invoices are parked (--note REASON)"
    return None


def _has_control(text: str, allowed: str = "") -> bool:
    return any((ord(c) < 32 or 127 <= ord(c) < 160) and c not in allowed for c in text)


def out_of_bounds(d: Decision) -> str | None:
    """The validator's cheap checks of size and shape (decisions.MAX_*), the same from every
    client: nothing longer than the bounds reaches the history, the memo or Postgres."""
    if len(d.by) > decisions.MAX_BY or _has_control(d.by):
        return f"--by must be an approver's name: at most {decisions.MAX_BY} characters, no " \
               f"control characters"
    if len(d.note) > decisions.MAX_NOTE or _has_control(d.note, "\n\t"):
        return f"--note is at most {decisions.MAX_NOTE} characters, no control characters " \
               f"(got {len(d.note)})"
    if len(d.park) > decisions.MAX_PARK:
        return f"--park at most {decisions.MAX_PARK} invoices in one decision (got {len(d.park)})"
    for invoice in d.park:
        if not invoice.strip() or len(invoice) > decisions.MAX_INVOICE_NO or _has_control(invoice):
            return f"--park takes invoice numbers of 1 to {decisions.MAX_INVOICE_NO} characters"
    if len(d.signature) > decisions.MAX_SIGNATURE or len(d.signed_at) > decisions.MAX_SIGNED_AT:
        return "the signature or its time is not one `recon approve` makes"
    if d.passkey is not None and any(
            len(f) > decisions.MAX_PASSKEY_FIELD for f in (
                d.passkey.credential_id, d.passkey.authenticator_data, d.passkey.client_data_json)):
        return "the passkey assertion is not one the desk makes"
    return None


def cut(text: str, limit: int) -> str:
    """A field of a refused decision as it may be kept (memo, Postgres): bounded."""
    return text if len(text) <= limit else text[:limit] + "…"


def describe_failure(step: str, err: ActivityError) -> tuple[str, str, str]:
    """(error type, message, what the agent would do next) of a step that failed for good."""
    cause = err.cause
    error_type = cause.type if isinstance(cause, ApplicationError) and cause.type else \
        type(cause).__name__ if cause else "ActivityError"
    message = cause.message if isinstance(cause, ApplicationError) else \
        str(cause) if cause else str(err)
    next_action = (
        f"run {step} again from its last committed entry, once the cause is fixed "
        f"(retry or resume: nothing already posted is posted twice, nothing missing is "
        f"skipped; add --park INVOICE --note WHY to go on without named invoices), or "
        f"undo the run (undo)"
    )
    return error_type, message, next_action


def attempts_of(err: ActivityError | None) -> int:
    """How many attempts the failed step made, as business_step put it in the error."""
    if err is None:
        return 0
    cause = err.cause
    if isinstance(cause, ApplicationError) and cause.details:
        detail = cause.details[0]
        if isinstance(detail, dict) and "attempt" in detail:
            return int(detail["attempt"])
    return 1


def until_next_morning(now: datetime, reminder_utc_time: str) -> timedelta:
    """How long until the next reminder (HH:MM[:SS] UTC), from the workflow's `now`."""
    hour, minute, second = (int(part) for part in
                            (reminder_utc_time.split(":") + ["0", "0"])[:3])
    morning = now.replace(hour=hour, minute=minute, second=second, microsecond=0)
    if morning <= now:
        morning += timedelta(days=1)
    return morning - now


class DecisionDesk:
    """The state of decisions on the pending handover, and the rules that take one."""

    def __init__(self, workflow_id: str, night: str, supplier_id: str | None,
                 heartbeat_seconds: float) -> None:
        self._workflow_id = workflow_id
        self._night = night
        self._supplier_id = supplier_id
        self._heartbeat = timedelta(seconds=heartbeat_seconds)
        self.ignored: list[IgnoredDecision] = []
        self.ignored_count = 0
        self.first: Decision | None = None  # four eyes: the approval waiting for a second one
        self.confirmed_by = ""
        self.refused_here = 0  # refusals recorded on the pending handover
        # Refusals never lock a handover (patch REFUSALS_NEVER_LOCK; None until the first
        # decision asks): past the cap, a decision is verified here, against the active
        # approvers' keys, before check_decision is asked (and the refusal recorded).
        self.never_locked: bool | None = None
        self.checking = 0  # checks in flight: they count towards the cap
        self.keys: dict[str, str] | None = None  # name: base64 public key, read past the cap
        self.keys_read_at: datetime | None = None
        self._reading_keys = False
        self.refused_signatures: set[bytes] = set()  # refused past the cap: not checked again
        # past the cap, the passkeys a passkey-signed decision is screened against (patch
        # PASSKEYS_PAST_CAP; read only when such a decision comes)
        self.passkeys: decisions.PasskeyBook | None = None
        self.passkeys_read_at: datetime | None = None
        self._reading_passkeys = False

    def new_handover(self) -> None:
        self.first, self.confirmed_by, self.refused_here = None, "", 0
        self.refused_signatures = set()

    def too_many_refused(self, handover_no: int) -> str | None:
        """The old rule, for runs recorded before REFUSALS_NEVER_LOCK: past the cap, nothing."""
        if self.refused_here >= decisions.MAX_REFUSED_PER_HANDOVER:
            return (f"{self.refused_here} decisions on handover #{handover_no} were refused "
                    f"already; no more are taken (the run keeps waiting for a signed one)")
        return None

    def _past_cap(self) -> bool:
        return self.refused_here + self.checking >= decisions.MAX_REFUSED_PER_HANDOVER

    def screen(self, d: Decision, now: datetime) -> str | None:
        """The validator's (and a signal's) word on the refusal cap, writing nothing. Under the
        cap: None. Past it, only a decision whose signature verifies against an active
        approver's key goes on to the check (a valid signature is always taken; junk is
        refused without a record, so a flood grows neither the history nor Postgres)."""
        if not self.never_locked:
            return self.too_many_refused(d.handover_no)
        if d.passkey is not None and self._past_cap() and self.passkeys is None:
            return None  # the handler reads the passkeys and screens it
        if not self._past_cap() or self.keys is None:
            return None  # under the cap, or the keys are being read: the handler screens it
        return self._unverified(d, now)

    def _unverified(self, d: Decision, now: datetime) -> str | None:
        cap = (f"{self.refused_here} decisions on handover #{d.handover_no} were refused already, "
               f"so only a decision whose signature verifies is checked now (and no refusal is "
               f"recorded)")
        digest = signature_digest(d.signature) if d.signature else None
        if digest is None or not d.signed_at:
            return f"{cap}: unsigned or not a signature"
        if digest in self.refused_signatures:
            return f"{cap}: this signature was refused on handover #{d.handover_no} already"
        if d.passkey is not None and self.passkeys is not None:
            return self._unverified_passkey(d, now, cap)
        key = (self.keys or {}).get(d.by)
        if key is None:
            if self.keys_read_at is not None and now - self.keys_read_at >= KEYS_FRESH_FOR:
                return None  # the handler reads the keys again first
            return f"{cap}: {d.by!r} is not an active approver"
        payload = decisions.canonical_decision(
            run=self._workflow_id, handover_no=d.handover_no, decision=d.decision, by=d.by,
            note=d.note, park=d.park, signed_at=d.signed_at)
        if not verifies(base64.b64decode(key), payload, d.signature):
            return f"{cap}: forged or altered, the signature does not verify against {d.by}'s key"
        return None

    def _unverified_passkey(self, d: Decision, now: datetime, cap: str) -> str | None:
        """Past the cap, a passkey-signed decision: by a passkey of `d.by` on record, over this
        decision's canonical hash, for the desk's origin and RP id (its counter is the check's)."""
        assert d.passkey is not None and self.passkeys is not None
        entry = self.passkeys.keys.get(d.passkey.credential_id)
        if entry is None or entry[0] != d.by:
            if self.passkeys_read_at is not None and now - self.passkeys_read_at >= KEYS_FRESH_FOR:
                return None  # the handler reads the passkeys again first
            return f"{cap}: not a passkey of an active approver {d.by!r}"
        payload = decisions.canonical_decision(
            run=self._workflow_id, handover_no=d.handover_no, decision=d.decision, by=d.by,
            note=d.note, park=d.park, signed_at=d.signed_at)
        try:
            verify_assertion(d.passkey, signature_bytes(d.signature),
                             challenge=challenge_of(payload), public_key=unb64url(entry[1]),
                             rp_id=self.passkeys.rp_id, origin=self.passkeys.origin)
        except PasskeyRefused:
            return (f"{cap}: forged or altered, the passkey assertion does not verify against "
                    f"{d.by}'s passkey")
        return None

    async def _read_passkeys(self, d: Decision) -> str | None:
        """Read the passkeys if the run has none, or `d`'s credential is new to them and they are
        older than KEYS_FRESH_FOR; one read at a time. An error line, or None."""
        assert d.passkey is not None
        now = workflow.now()
        stale = self.passkeys is None or (
            d.passkey.credential_id not in self.passkeys.keys
            and self.passkeys_read_at is not None and now - self.passkeys_read_at >= KEYS_FRESH_FOR)
        if stale and self._reading_passkeys:
            await workflow.wait_condition(lambda: not self._reading_passkeys)
        elif stale:
            self._reading_passkeys = True
            try:
                self.passkeys = await workflow.execute_activity_method(
                    DecisionActivities.approver_passkeys, start_to_close_timeout=READ_TIMEOUT,
                    heartbeat_timeout=self._heartbeat, retry_policy=RETRY,
                    summary="read the active approvers' passkeys")
                self.passkeys_read_at = workflow.now()
            except ActivityError as err:
                return f"the passkey assertion could not be checked: {err.cause or err}"
            finally:
                self._reading_passkeys = False
        return None

    async def _screened(self, d: Decision) -> str | None:
        """Past the cap, in the handler: read the keys if the run has none (or a name is new to
        them and they are older than KEYS_FRESH_FOR), then screen as the validator does."""
        if d.passkey is not None and (self.passkeys is not None
                                      or workflow.patched(PASSKEYS_PAST_CAP)):
            return await self._read_passkeys(d) or self._unverified(d, workflow.now())
        now = workflow.now()
        stale = self.keys is None or (
            d.by not in self.keys and self.keys_read_at is not None
            and now - self.keys_read_at >= KEYS_FRESH_FOR)
        if stale and self._reading_keys:
            await workflow.wait_condition(lambda: not self._reading_keys)
        elif stale:
            self._reading_keys = True
            try:
                self.keys = await workflow.execute_activity_method(
                    DecisionActivities.approver_keys, start_to_close_timeout=READ_TIMEOUT,
                    heartbeat_timeout=self._heartbeat, retry_policy=RETRY,
                    summary="read the active approvers' keys")
                self.keys_read_at = workflow.now()
            except ActivityError as err:
                return f"the signature could not be checked: {err.cause or err}"
            finally:
                self._reading_keys = False
        return self._unverified(d, workflow.now())

    async def take(self, d: Decision, via: str,
                   why_not: Callable[[Decision], str | None]) -> tuple[Decision | None, str, bool]:
        """(the decision to act on, or None; the one line for whoever sent it; refused?).
        Neither taken nor refused: the first of two approvals, kept until a second one."""
        if self.never_locked is None:
            self.never_locked = workflow.patched(REFUSALS_NEVER_LOCK)
        past_cap = bool(self.never_locked) and self._past_cap()
        if past_cap:
            junk = await self._screened(d)
            if junk:
                return None, junk, True
        first = self.first
        check = decisions.DecisionCheck(
            check_id=str(workflow.uuid4()), workflow_id=self._workflow_id, night=self._night,
            execution=workflow.info().first_execution_run_id,
            supplier_id=self._supplier_id, handover_no=d.handover_no, via=via,
            received_at=workflow.now().isoformat(), decision=d.decision, by=d.by, note=d.note,
            park=sorted(set(d.park)), signed_at=d.signed_at, signature=d.signature,
            passkey=d.passkey,
            first_approver=first.by if first else "",
            first_decision=first.decision if first else "",
            first_park=list(first.park) if first else [],
        )
        self.checking += 1
        try:
            verdict = await workflow.execute_activity_method(
                DecisionActivities.check_decision, check, start_to_close_timeout=READ_TIMEOUT,
                heartbeat_timeout=self._heartbeat, retry_policy=RETRY,
                summary=f"check the signature of {d.decision} by {cut(d.by, 64)}")
        except ActivityError as err:
            return None, f"the signature could not be checked: {err.cause or err}", True
        finally:
            self.checking -= 1
        moved_on = why_not(d)  # another decision, or the run, may have moved on meanwhile
        if moved_on:
            return None, moved_on, True
        if verdict.refused:
            self.refused_here += 1
            digest = signature_digest(d.signature) if past_cap else None
            if digest is not None:
                self.refused_signatures.add(digest)
            return None, verdict.refused, True
        signed = d.model_copy(update={"by": verdict.approver, "park": sorted(set(d.park))})
        if verdict.first_of_two or verdict.confirms:
            return self._four_eyes(signed, verdict.stake_paise, verdict.stake_words)
        if self.first is not None:  # another decision ends the wait for a second approver
            workflow.upsert_memo({"awaiting_second_approver": None})
        return signed, f"{d.decision} accepted for handover #{d.handover_no}", False

    def _four_eyes(self, d: Decision, stake: int,
                   words: str = "") -> tuple[Decision | None, str, bool]:
        first = self.first
        if first is None:
            self.first = d
            workflow.upsert_memo({"awaiting_second_approver": {
                "handover": d.handover_no, "decision": d.decision, "by": d.by,
                "parked": d.park}})
            return None, (f"{d.decision} by {d.by} recorded for handover #{d.handover_no}: "
                          f"{words or rupees(stake)} at stake needs a second approver (four "
                          "eyes)"), False
        if first.by == d.by:  # two checks of one approver raced
            return None, f"four eyes: {d.by} already approved handover #{d.handover_no}", True
        if (first.decision, first.park) != (d.decision, d.park):
            return None, (f"four eyes: {first.by} approved {first.decision}; a second approval "
                          f"must be the same decision"), True
        self.confirmed_by = d.by
        workflow.upsert_memo({"awaiting_second_approver": None})
        return first, (f"{d.decision} accepted for handover #{d.handover_no}: approved by "
                       f"{first.by}, confirmed by {d.by}"), False

    def ignore(self, d: Decision, reason: str) -> None:
        """A signal that cannot be taken stays on the run: the last few and a count."""
        self.ignored_count += 1
        self.ignored.append(IgnoredDecision(
            decision=cut(d.decision, 16), by=cut(d.by, decisions.MAX_BY),
            handover_no=d.handover_no, reason=cut(reason, 400),
            received_at=workflow.now().isoformat(),
        ))
        if workflow.patched(BOUNDED_IGNORED):
            del self.ignored[:-decisions.IGNORED_KEPT]
            workflow.upsert_memo({"ignored_decisions": [i.model_dump() for i in self.ignored],
                                  "ignored_count": self.ignored_count})
            return
        if workflow.patched(DECISIONS_ON_RECORD):  # the older, unbounded memo of older runs
            workflow.upsert_memo({"ignored_decisions": [i.model_dump() for i in self.ignored]})

