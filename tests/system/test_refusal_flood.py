"""Refusals cannot lock a night (issue 39, item 3; docs/design.md §3 "Signed decisions").

An attacker who reaches only the Temporal frontend floods a waiting night with junk decisions:
unsigned ones, and ones with a random 64-byte "signature" under a real approver's name, as
Updates and as Signals, well past the MAX_REFUSED_PER_HANDOVER refusals that are recorded. The
approvers' signed decisions are still taken afterwards (a Signal, then `recon approve`), the
refusals on record stop at the cap, and the junk past it grows neither Postgres nor the history
by checks."""

from __future__ import annotations

import asyncio
import base64
import os
from datetime import UTC, datetime

import asyncpg
import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from recon.domain.decisions import MAX_REFUSED_PER_HANDOVER
from tests.approvers import key_path, signed
from tests.helpers import recon_cli
from tests.system.test_signed_decisions import _at_gate, _waiting

pytestmark = pytest.mark.slow


def _junk(n: int) -> dict:
    if n % 2:
        return {"decision": "resume", "by": "asha", "handover_no": 1}  # unsigned
    return {"decision": "resume", "by": "asha", "handover_no": 1,
            "signed_at": datetime.now(UTC).replace(microsecond=0).isoformat(),
            "signature": base64.b64encode(os.urandom(64)).decode()}  # a forged signature


async def _refused(handle, decision: dict) -> None:
    """One junk Update, sent until the night answers it: refused. Under a flood the server may
    clear the run's Update registry and answer "workflow update was aborted" (Unavailable, which
    it documents as retryable; the client gives up after a few tries): the attacker sends it
    again, as we do here. Any other answer fails the test."""
    for _ in range(20):
        try:
            await handle.execute_update("decide", decision)
        except WorkflowUpdateFailedError:
            return
        except RPCError as err:
            if err.status != RPCStatusCode.UNAVAILABLE or "aborted" not in err.message:
                raise
            await asyncio.sleep(0.2)
            continue
        raise AssertionError(f"a junk decision was taken: {decision}")
    raise AssertionError("the server aborted the same junk Update 20 times")


async def _flood(handle, count: int) -> None:
    async def one(n: int) -> None:
        await _refused(handle, _junk(n))
    await asyncio.gather(*(one(n) for n in range(count)))
    for n in range(count):
        await handle.signal("decide_signal", _junk(n))


async def _checks_in_history(handle) -> int:
    history = await handle.fetch_history()
    return sum(1 for e in history.events
               if e.HasField("activity_task_scheduled_event_attributes")
               and e.activity_task_scheduled_event_attributes.activity_type.name == "check_decision")


async def test_a_flood_of_junk_decisions_leaves_the_night_open_to_signed_ones(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    wf, handle = await _at_gate(pool, client, night, spawn_worker, RECON_FOUR_EYES_PAISE="100")
    await _flood(handle, MAX_REFUSED_PER_HANDOVER + 10)
    assert await _waiting(client, wf)

    # asha's signed decision as a Signal, after the flood: taken (the first of two approvals).
    first = await signed(pool, stack.state, wf, "resume")
    await handle.signal("decide_signal", first.model_dump())

    async def first_recorded() -> bool:
        memo = await (await handle.describe()).memo()
        return bool(memo.get("awaiting_second_approver"))
    for _ in range(100):
        if await first_recorded():
            break
        await asyncio.sleep(0.2)
    assert await first_recorded(), "asha's signed signal was not taken after the flood"

    await _flood(handle, 25)  # more junk between the two approvals
    ravi = dict(stack.env(), RECON_APPROVER_KEY=str(key_path(stack.state, "ravi")))
    second = recon_cli(ravi, "approve", wf, "--handover", "1", "--decision", "resume",
                       "--by", "ravi")
    assert second.returncode == 0, second.stderr
    summary = await asyncio.wait_for(handle.result(), 60)
    assert summary.status == "Completed"
    decided = await pool.fetchrow(
        "SELECT decided_by, confirmed_by FROM handovers WHERE workflow_id = $1", wf)
    assert tuple(decided) == ("asha", "ravi")

    # The refusals recorded stop at the cap (a few may be in flight together when it is
    # reached), and past it no junk reaches the check activity.
    recorded = await pool.fetchval(
        "SELECT count(*) FROM refused_decisions WHERE workflow_id = $1", wf)
    assert MAX_REFUSED_PER_HANDOVER <= recorded <= MAX_REFUSED_PER_HANDOVER + 2, recorded
    assert await _checks_in_history(handle) <= recorded + 2
