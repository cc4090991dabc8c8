"""The Web UI as the operator's console: what `describe` and the UI's metadata query show of a
run waiting at the gate and of the same run finished."""

from __future__ import annotations

import asyncio
import json
import re

import asyncpg
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowHandle

from recon.domain import money
from recon.domain.requests import UNDO
from recon.store.undo import Scope, reversed_paise
from recon.tools.seed import seed_night
from tests.approvers import signed, signed_as
from tests.helpers import inprocess_worker, settings_for, start, wait_for


async def _current_details(handle: WorkflowHandle) -> str:
    """What the Web UI shows as *Current details* (the SDK's built-in metadata query)."""
    meta = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    return meta.current_details


async def _is(read, expected) -> bool:
    return await read() == expected


def _attributes(description) -> dict:
    return {p.key.name: p.value for p in description.typed_search_attributes}


async def test_describe_shows_summary_details_and_search_attributes(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=40, mismatches=5)
    settings = settings_for(queue, gate_max_total_paise=100)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)

        async def waiting() -> bool:
            return (await handle.query("progress"))["status"] == "AwaitingDecision"
        await wait_for(waiting, 60, "the gate to hand over")

        running = await handle.describe()
        assert await running.static_summary() == f"Reconcile {warehouse} · {day}"
        assert f"**Warehouse** {warehouse}" in (await running.static_details() or "")
        attrs = _attributes(running)
        assert attrs["ReconStatus"] == "AwaitingDecision"
        assert attrs["ReconStep"] == "gate_before_debit_notes", "the step shown at the gate is the gate"
        assert (attrs["ReconWarehouse"], attrs["ReconDate"]) == (warehouse, day)
        details = await _current_details(handle)
        assert "waiting for a decision on handover #1: gate_before_debit_notes" in details
        assert '"decision": "resume"' in details, "the JSON to paste in the Update dialog"

        history = await handle.fetch_history()
        summaries = [e.user_metadata.summary for e in history.events
                     if e.HasField("activity_task_scheduled_event_attributes")]
        assert summaries and all(s.data for s in summaries), "every activity has a summary"
        assert b"step 7: posting ledger adjustments" in b" ".join(s.data for s in summaries)

        await handle.execute_update("decide", await signed(pool, stack.state, handle.id,
                                                                     "resume", note="ok"))
        result = await asyncio.wait_for(handle.result(), 60)
        finished = await handle.describe()
        assert _attributes(finished)["ReconStatus"] == "Completed"
        memo = await finished.memo()
        assert memo["headline"]["status"] == "Completed"
        assert memo["headline"]["ledger_entries"] == 5 and memo["headline"]["invoices"] == 40
        # People's words: ₹ in Indian grouping, the figure Postgres holds, and no paise anywhere.
        posted = await pool.fetchval("SELECT sum(amount_paise) FROM ledger_entries "
                                     "WHERE workflow_id = $1", handle.id)
        rupees = memo["headline"]["adjusted"]
        assert re.fullmatch(r"₹\d{1,2}(,\d\d)*,\d{3}(\.\d\d)?", rupees), rupees
        assert int(re.sub(r"[₹,.]", "", rupees)) * (1 if "." in rupees else 100) == posted
        sentence = f"Completed: 5 claims, {rupees} adjusted"
        assert memo["headline"]["night"].startswith(sentence)
        assert "paise" not in json.dumps(memo) and str(posted) not in json.dumps(memo)
        assert (await _current_details(handle)).startswith(f"**{sentence}")
        assert result.in_words == memo["headline"]["night"]
        assert [(d["handover"], d["decision"], d["by"]) for d in memo["decisions"]] == [
            (1, "resume", "asha")]

        from recon.ops.undo import start_undo

        await start_undo(client, pool, settings, handle.id, None, [], "wrong night",
                         await signed_as(pool, stack.state, UNDO, handle.id, reason="wrong night"))
        undo = await client.get_workflow_handle(f"undo-{handle.id}").describe()
        assert await undo.static_summary() == f"Undo of {handle.id} (whole run)"
        assert f"/workflows/{handle.id})" in (await undo.static_details() or ""), "links to its run"
        reversed_rupees = money.rupees(await reversed_paise(pool, Scope(handle.id, None, ())))
        assert (await undo.memo())["headline"]["undone"].startswith(
            f"Undone: {handle.id} (whole run): 5 ledger entries reversed ({reversed_rupees} in ₹)")

        # The closed night cannot change; its undo is listed beside it, Undone, under its filter.
        async def listed_beside() -> dict:
            rows = [w async for w in client.list_workflows(
                f'ReconWarehouse="{warehouse}" AND ReconDate="{day}"')]
            return {w.id: _attributes(w).get("ReconStatus") for w in rows}
        await wait_for(lambda: _is(listed_beside, {handle.id: "Completed",
                                                    f"undo-{handle.id}": "Undone"}),
                       30, "the undo listed beside its night")
