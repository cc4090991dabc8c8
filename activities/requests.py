"""The signature check of an undo or a redo, against the approvers on record in Postgres.

An undo workflow started by anyone but its own night, and a redo (the nightly workflow with
`redo_of`), ask this activity before they do anything: is the request signed by an active approver's
key (or passkey: the same check as a decision's), fresh, within the signer's limit for the money it
moves (the live ledger an undo reverses, what a redo posts again), and is its signature unspent? A
refusal is kept on record (`refused_requests`) with who tried; the workflow then ends without writing
anything."""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import activity

from activities.resources import Room
from activities.step import business_step
from recon.domain.keys import undo_workflow_id
from recon.domain.requests import (
    UNDO,
    WHAT,
    RequestCheck,
    RequestVerdict,
    already_used,
    canonical_request,
    judge,
    signature_digest,
    spend_target,
)
from recon.domain.signing import verifies
from recon.store import approvers, passkeys, requests
from recon.store.generations import current_generation


class RequestActivities(Room):
    """Undo and redo are taken only from known people: the check of each request."""

    @activity.defn(name="check_signed_request")
    @business_step
    async def check_signed_request(self, check: RequestCheck) -> RequestVerdict:
        verdict = await self._verdict(check)
        if verdict.refused:
            await requests.record_refusal(
                self.pool, check_id=check.check_id, purpose=check.purpose, run=check.run,
                target=check.target, tried_by=check.by, signer=verdict.approver or None,
                stake_paise=verdict.stake_paise or None, reason=verdict.refused,
                received_at=datetime.fromisoformat(check.received_at))
            activity.logger.warning("refused %s of %s by %r: %s", check.purpose, check.run,
                                    check.by[:64], verdict.refused)
        return verdict

    async def _verdict(self, c: RequestCheck) -> RequestVerdict:
        pool = self.pool
        person = await approvers.by_name(pool, c.by[:64]) if c.signature else None
        payload = canonical_request(c.purpose, run=c.run, supplier=c.supplier_id,
                                    references=c.references, reason=c.reason, by=c.by,
                                    signed_at=c.signed_at)
        if person is not None and c.passkey is not None and c.signed_at:
            problem = await passkeys.passkey_problem(
                pool, c.passkey, c.signature, name=person.name, canonical=payload,
                rp_id=self.settings.desk_rp_id, origin=self.settings.desk_origin,
                what=WHAT.get(c.purpose, c.purpose))
            if problem:
                return RequestVerdict(refused=problem)
            verified = True
        else:
            verified = person is not None and c.passkey is None and verifies(
                person.public_key, payload, c.signature)
        stake: dict[str, int] = {}
        if verified:
            stake = await (requests.undo_stake(pool, c.run, c.supplier_id, c.references)
                           if c.purpose == UNDO
                           else requests.redo_stake(pool, c.run, c.supplier_id))
        verdict = judge(c.purpose, by=c.by, signer=person, verified=verified,
                        signed_at=c.signed_at, signature=c.signature,
                        received_at=datetime.fromisoformat(c.received_at),
                        max_age=timedelta(seconds=self.settings.decision_max_age_seconds),
                        stake=stake)
        if verdict.refused:
            return verdict
        digest = signature_digest(c.signature)
        assert digest is not None  # it verified
        # The use is tied to the night's generation now: what the mandates read (an undo's scope,
        # a redo's generation and supplier; recon/store/mandates.py).
        generation = await current_generation(pool, c.run)
        use = requests.Use(
            night=c.run, generation=generation, supplier_id=c.supplier_id,
            scope=undo_workflow_id(c.run, c.supplier_id, c.references) if c.purpose == UNDO
            else None)
        used = await requests.spend(
            pool, digest, purpose=c.purpose, run=c.run,
            target=spend_target(c.target, c.execution, ""), signer=verdict.approver, use=use)
        if used:
            return verdict.model_copy(update={"refused": already_used(*used)})
        return verdict
