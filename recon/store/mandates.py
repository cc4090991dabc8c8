"""Mandates: may this money move now? Asked by every activity that moves money, in the
transaction that moves it (docs/design.md §3, "Mandates").

Temporal's frontend lets anyone who reaches it start workflows and call activities by name on
any task queue, under any workflow id, so an activity never takes its caller's word. It reads its
mandate from rows that only the checks write, after checking what they check:

- `spent_signatures`: a verified signature's use (activities/requests.py, activities/decisions.py),
  with the night, the generation it was used in, and what it decided;
- `gate_outcomes`: the gate's own verdict (activities/handovers.py, `check_evidence`);
- `run_generations.authority`: which authorised undo opened a generation.

One indexed lookup per write transaction (a batch of the ledger, a range of stock, one message).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg

from recon.domain.decisions import PURPOSE as DECISION
from recon.domain.errors import MandateRefused
from recon.domain.requests import REDO, UNDO
from recon.domain.steps import GATE

Db = asyncpg.Connection | asyncpg.Pool
Check = Callable[[asyncpg.Connection], Awaitable[None]]

# A use that may undo a night: a signed undo request, or a taken `undo` decision on a handover.
_UNDO_USE = f"(s.purpose = '{UNDO}' OR (s.purpose = '{DECISION}' AND s.decision = 'undo'))"
# ... and it is still good: no redo of the night was signed since (in a later generation).
_NO_REDO_SINCE = f"""NOT EXISTS (SELECT 1 FROM spent_signatures r
                    WHERE r.night = s.night AND r.purpose = '{REDO}'
                      AND r.generation > s.generation)"""

_POSTING = f"""
SELECT recon_generation($1) AS current,
       EXISTS (SELECT 1 FROM spent_signatures s
               WHERE s.night = $1 AND s.purpose = '{REDO}' AND s.generation = $3
                 AND (s.supplier_id IS NULL OR s.supplier_id = $2)) AS redo
"""

_NOTES = f"""
WITH gate AS (
    SELECT bool_or(passed) AS passed, bool_or(verified) AS verified FROM gate_outcomes
    WHERE night = $1 AND generation = $3 AND scope IN ('', coalesce($2, ''))
)
SELECT recon_generation($1) AS current, coalesce(gate.passed, false) AS passed,
       coalesce(gate.verified, false) AND EXISTS (
           SELECT 1 FROM spent_signatures s
           JOIN handovers h ON h.workflow_id = s.run AND h.handover_no = s.handover_no
           WHERE s.night = $1 AND s.purpose = '{DECISION}' AND s.generation = $3
             AND s.decision = 'resume' AND s.taken AND h.step = '{GATE.name}'
             AND (s.supplier_id IS NULL OR s.supplier_id = $2)) AS resumed
FROM gate
"""

_UNDO = f"""
SELECT EXISTS (
    SELECT 1 FROM spent_signatures s
    JOIN run_generations g ON g.authority = s.signature_sha256
    WHERE s.night = $1 AND s.scope = $2 AND s.taken AND {_UNDO_USE} AND {_NO_REDO_SINCE})
"""

_UNOPENED_UNDO = f"""
SELECT s.signature_sha256 FROM spent_signatures s
WHERE s.night = $1 AND s.taken AND {_UNDO_USE} AND {_NO_REDO_SINCE}
  AND NOT EXISTS (SELECT 1 FROM run_generations g WHERE g.authority = s.signature_sha256)
ORDER BY s.used_at LIMIT 1
"""

_OPENED_UNDO = f"""
SELECT EXISTS (SELECT 1 FROM spent_signatures s
               JOIN run_generations g ON g.authority = s.signature_sha256
               WHERE s.night = $1 AND s.taken AND {_UNDO_USE} AND {_NO_REDO_SINCE})
"""


@dataclass(frozen=True)
class Posting:
    """Steps 7-8 (and a redo's): the night's own generation, open. Generation 1 is a night never
    undone; a later one is open only to a verified redo of that generation and scope."""

    night: str
    supplier_id: str | None
    generation: int

    async def __call__(self, conn: asyncpg.Connection) -> None:
        row = await conn.fetchrow(_POSTING, self.night, self.supplier_id, self.generation)
        if row["current"] != self.generation:
            raise MandateRefused(
                f"{self.night} is in generation {row['current']}, not {self.generation}: "
                f"nothing is posted under an old generation's keys")
        if self.generation > 1 and not row["redo"]:
            raise MandateRefused(
                f"{self.night} was undone (generation {self.generation}) and no signed redo "
                f"{_scope_words(self.supplier_id)}of this generation is on record: posting it "
                f"again is a redo (recon redo {self.night} --reason WHY)")


@dataclass(frozen=True)
class Notes:
    """Step 9: the gate passed for this night, generation and scope (its own check wrote so), or
    it held on a verified ledger and a person's verified `resume` at the gate overrode it."""

    night: str
    supplier_id: str | None
    generation: int

    async def __call__(self, conn: asyncpg.Connection) -> None:
        row = await conn.fetchrow(_NOTES, self.night, self.supplier_id, self.generation)
        if row["current"] != self.generation:
            raise MandateRefused(
                f"{self.night} is in generation {row['current']}, not {self.generation}: no "
                f"debit note goes out for an old generation")
        if not (row["passed"] or row["resumed"]):
            raise MandateRefused(
                f"no debit notes for {self.night} {_scope_words(self.supplier_id)}in generation "
                f"{self.generation}: its gate has not passed and no verified resume at the gate "
                f"is on record")


_PARKING = f"""
SELECT EXISTS (SELECT 1 FROM spent_signatures s
               WHERE s.night = $1 AND s.purpose = '{DECISION}' AND s.handover_no = $2 AND s.taken
                 AND s.generation = recon_generation($1) AND s.park @> $3::text[])
"""


@dataclass(frozen=True)
class Parking:
    """Parking by decision: a verified, taken decision on this handover of the night, in its
    current generation, signed these invoices out. Nothing else parks by name: a parked invoice
    leaves ledger, stock, notes and the gate's weighing alike."""

    night: str
    handover_no: int
    invoices: tuple[str, ...]

    async def __call__(self, conn: asyncpg.Connection) -> None:
        if not await conn.fetchval(_PARKING, self.night, self.handover_no, list(self.invoices)):
            raise MandateRefused(
                f"no verified decision on handover #{self.handover_no} of {self.night} signed "
                f"these invoices out: nothing is parked")


@dataclass(frozen=True)
class Undo:
    """Withdrawals and reversals: a verified undo of this night and scope (a signed request, or
    an `undo` decision on one of its handovers) that opened its generation, with no redo since."""

    night: str
    scope: str  # keys.undo_workflow_id(night, supplier, references)

    async def __call__(self, conn: asyncpg.Connection) -> None:
        if not await conn.fetchval(_UNDO, self.night, self.scope):
            raise MandateRefused(
                f"no verified undo of {self.scope} is on record that is still good (signed, its "
                f"generation opened, no redo since): nothing of {self.night} is reversed")


def _scope_words(supplier_id: str | None) -> str:
    return f"for supplier {supplier_id} " if supplier_id else ""


async def open_next_generation(pool: asyncpg.Pool, night: str, raised_by: str) -> int:
    """The undo moves the night to its next generation before it reverses anything: one
    generation per authorised undo. The same undo execution again (a retried activity) raises
    nothing; an undo whose authority already opened its generation (a reset of it, before any
    redo) raises nothing either; with no undo authority on record that is still good, refused."""
    async with pool.acquire() as conn, conn.transaction():
        # One opener of a night at a time: two undos never take the same authority.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('generation:' || $1))", night)
        if not await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM run_generations WHERE workflow_id = $1"
                " AND raised_by = $2)", night, raised_by):
            authority = await conn.fetchval(_UNOPENED_UNDO, night)
            if authority is not None:
                await conn.execute(
                    "INSERT INTO run_generations (workflow_id, raised_by, authority)"
                    " VALUES ($1, $2, $3)", night, raised_by, authority)
            elif not await conn.fetchval(_OPENED_UNDO, night):
                raise MandateRefused(
                    f"no verified undo of {night} is on record (a signed request, or an undo "
                    f"decision on one of its handovers, with no redo since): nothing is undone")
        return int(await conn.fetchval("SELECT recon_generation($1)", night))


async def record_gate(conn: Db, night: str, generation: int, supplier_id: str | None,
                      verified: bool, passed: bool) -> None:
    """The gate's verdict, as its own check read it; the latest check of a scope stands."""
    await conn.execute(
        "INSERT INTO gate_outcomes (night, generation, scope, verified, passed)"
        " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (night, generation, scope) DO UPDATE"
        " SET verified = excluded.verified, passed = excluded.passed, checked_at = now()",
        night, generation, supplier_id or "", verified, passed)
