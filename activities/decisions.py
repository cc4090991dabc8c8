"""The signature check of a decision, against the approvers on record in Postgres.

The workflow's `decide` Update (and its signal) hand every decision that passed the validator's
cheap checks (shape, lengths, the pending handover) to this activity before acting on it. It
answers who signed, how much money the decision puts at stake, and whether it is refused:
unsigned, forged (the signature does not verify against the key on record for the name it
carries), revoked, stale, over the approver's limit, or parking what cannot be parked. Every
refusal is kept on record (`refused_decisions`) with who tried; the run keeps waiting. A
signature is good for one use (`spent_signatures`): the same decision for the same handover of the
same execution is the same use again (a retry), for anything else it is refused.
"""

from __future__ import annotations

import base64
from datetime import datetime, timedelta

from temporalio import activity

from activities.resources import Room
from activities.step import business_step
from recon.domain.decisions import (
    PURPOSE,
    DecisionCheck,
    DecisionVerdict,
    PasskeyBook,
    canonical_decision,
    four_eyes,
    over_limit,
    stake_needs_four_eyes,
    staleness,
)
from recon.domain.keys import undo_workflow_id
from recon.domain.money import BASE_CURRENCY, amounts, rupees
from recon.domain.passkeys import b64url
from recon.domain.requests import already_used, signature_digest, spend_target
from recon.domain.signing import verifies
from recon.store import approvers, requests
from recon.store import decisions as decision_store
from recon.store import passkeys as passkey_store
from recon.store.generations import current_generation
from recon.store.inspection import live_rows_of_invoice
from recon.store.invoices import in_run


class DecisionActivities(Room):
    """Decisions are taken only from known people: the check of each one."""

    @activity.defn(name="check_decision")
    @business_step
    async def check_decision(self, check: DecisionCheck) -> DecisionVerdict:
        verdict = await self._verdict(check)
        if not verdict.refused:
            verdict = await self._spend(check, verdict)
        if verdict.refused:
            await decision_store.record_refusal(
                self.pool, check_id=check.check_id, workflow_id=check.workflow_id,
                handover_no=check.handover_no, via=check.via, tried_by=check.by,
                signer=verdict.approver or None, decision=check.decision, park=check.park,
                stake_paise=verdict.stake_paise, reason=verdict.refused,
                received_at=datetime.fromisoformat(check.received_at),
            )
            activity.logger.warning(
                "refused decision %s by %r on handover #%s: %s", check.decision, check.by,
                check.handover_no, verdict.refused)
        return verdict

    @activity.defn(name="approver_keys")
    @business_step
    async def approver_keys(self) -> dict[str, str]:
        """The active approvers' public keys (name: base64 of the 32 raw bytes): what a run that
        has refused MAX_REFUSED_PER_HANDOVER decisions on a handover verifies a decision against
        before it asks check_decision again (workflows/decisions.py, DecisionDesk.screen)."""
        return {a.name: base64.b64encode(a.public_key).decode()
                for a in await approvers.all_approvers(self.pool) if a.active and a.public_key}

    @activity.defn(name="approver_passkeys")
    @business_step
    async def approver_passkeys(self) -> PasskeyBook:
        """The active approvers' passkeys and the desk's origin and RP id: what a run past the
        refusal cap screens a passkey-signed decision against (workflows/decisions.py)."""
        keys = {b64url(k.credential_id): [k.approver, b64url(k.public_key)]
                for k in await passkey_store.active(self.pool)}
        return PasskeyBook(origin=self.settings.desk_origin, rp_id=self.settings.desk_rp_id,
                           keys=keys)

    async def _spend(self, c: DecisionCheck, verdict: DecisionVerdict) -> DecisionVerdict:
        """The decision's signature is used now, for this handover of this execution of the run
        (a reset keeps the first execution's id, so a decision reapplied by a reset is the same
        use); used before for anything else, it is refused."""
        digest = signature_digest(c.signature)
        assert digest is not None  # it verified
        # What the mandates read (recon/store/mandates.py): the night and its generation now,
        # what was decided on which handover, and whether it was taken (four eyes: the first of
        # two approvals authorises nothing by itself).
        use = requests.Use(
            night=c.night, generation=await current_generation(self.pool, c.night),
            scope=undo_workflow_id(c.night, c.supplier_id) if c.decision == "undo" else None,
            supplier_id=c.supplier_id, decision=c.decision, handover_no=c.handover_no,
            taken=not verdict.first_of_two, park=tuple(sorted(set(c.park))))
        used = await requests.spend(
            self.pool, digest, purpose=PURPOSE, run=c.workflow_id, signer=verdict.approver,
            target=spend_target(c.workflow_id, c.execution, f"#handover-{c.handover_no}"),
            use=use)
        if used:
            return verdict.model_copy(update={"refused": already_used(*used), "first_of_two": False,
                                              "confirms": ""})
        return verdict

    async def _verdict(self, c: DecisionCheck) -> DecisionVerdict:
        pool = self.pool
        if not c.signature or not c.signed_at:
            return DecisionVerdict(refused=(
                f"unsigned decision by {c.by!r}: decisions are signed by a known approver "
                f"(recon approve with RECON_APPROVER_KEY or --key)"))
        person = await approvers.by_name(pool, c.by)
        payload = canonical_decision(run=c.workflow_id, handover_no=c.handover_no,
                                     decision=c.decision, by=c.by, note=c.note, park=c.park,
                                     signed_at=c.signed_at)
        if person is None:
            return DecisionVerdict(refused=f"{c.by!r} is not an approver on record")
        if c.passkey is not None:
            problem = await self._passkey_problem(c, person.name, payload)
            if problem:
                return DecisionVerdict(refused=problem)
        elif not verifies(person.public_key, payload, c.signature):
            return DecisionVerdict(refused=(
                f"forged or altered: the signature does not verify against {person.name}'s key "
                f"for this run, handover and decision"))
        name = person.name
        if not person.active:
            return DecisionVerdict(approver=name, refused=(
                f"{name}'s key was revoked at {person.revoked_at:%Y-%m-%d %H:%M:%S %Z}"))
        received = datetime.fromisoformat(c.received_at)
        stale = staleness(c.signed_at, received,
                          timedelta(seconds=self.settings.decision_max_age_seconds))
        if stale:
            return DecisionVerdict(approver=name, refused=stale)
        park_problem = await self._park_problem(c)
        if park_problem:
            return DecisionVerdict(approver=name, refused=park_problem)
        # per currency: a limit and the four-eyes amount are ₹, and a stake in another currency
        # is over them (no rate is assumed; recon/domain/decisions.py)
        stakes = await decision_store.money_at_stake(pool, c.night, c.supplier_id, c.decision,
                                                     c.park)
        stake = stakes.get(BASE_CURRENCY, 0)
        if over_limit(stakes, person.limit_paise):
            return DecisionVerdict(approver=name, stake_paise=stake, refused=(
                f"over {name}'s limit: this {c.decision} puts {amounts(stakes)} at stake, "
                f"{name} may decide up to {rupees(person.limit_paise)}"))
        if not stake_needs_four_eyes(c.decision, c.park, stakes, self.settings.four_eyes_paise):
            return DecisionVerdict(approver=name, stake_paise=stake)
        return four_eyes(c, name, stake, amounts(stakes))

    async def _passkey_problem(self, c: DecisionCheck, name: str, payload: bytes) -> str | None:
        """A decision signed on the desk: the one check of a passkey signature
        (recon.store.passkeys.passkey_problem), shared with undo, redo and the mail answers."""
        assert c.passkey is not None
        return await passkey_store.passkey_problem(
            self.pool, c.passkey, c.signature, name=name, canonical=payload,
            rp_id=self.settings.desk_rp_id, origin=self.settings.desk_origin,
            what="run, handover and decision")

    async def _park_problem(self, c: DecisionCheck) -> str | None:
        """The same check for every client (CLI, Web UI, a bare Update): an invoice that is not
        in the night, or already has live entries, cannot be left out consistently."""
        for invoice in c.park:
            if not await in_run(self.pool, c.night, invoice):
                return f"--park {invoice!r}: no such invoice in {c.night}"
            live = await live_rows_of_invoice(self.pool, c.night, invoice)
            if live:
                return (f"--park {invoice!r}: it already has {live} live ledger or stock "
                        f"entries; parking it now would leave the run inconsistent")
        return None
