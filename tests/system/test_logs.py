"""Logs of a real worker process, read as JSON lines: a worker killed at entry 24 of step 7, the
retry on a second worker (attempt 2, resumed from its heartbeat), and a handover at the gate, each
named with the run's workflow id, run id, step and attempt. No document text at info."""

from __future__ import annotations

import asyncio
import json

import asyncpg
from temporalio.client import Client

from recon.tools.seed import seed_night
from tests.approvers import signed
from tests.helpers import settings_for, start, wait_for


def _json_lines(text: str) -> list[dict]:
    lines = []
    for raw in text.splitlines():
        raw = raw.strip()
        if raw.startswith("{"):
            lines.append(json.loads(raw))
    return lines


async def test_the_json_logs_tell_the_crash_the_retry_and_the_handover(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, stack
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=8)
    doomed = spawn_worker(queue, RECON_FAILPOINTS="post_adjustments:5", RECON_POST_BATCH="2",
                          RECON_GATE_MAX_TOTAL_PAISE="100")
    handle = await start(client, settings_for(queue, post_batch_size=2),
                         day, warehouse)
    assert await doomed.wait_exit(60) == 137
    rescuer = spawn_worker(queue, RECON_GATE_MAX_TOTAL_PAISE="100")

    async def waiting() -> bool:
        return (await handle.query("progress"))["status"] == "AwaitingDecision"
    await wait_for(waiting, 60, "the gate to hand over")
    await handle.execute_update("decide", await signed(pool, stack.state, handle.id, "resume"))
    await asyncio.wait_for(handle.result(), 60)
    run_id = (await handle.describe()).run_id
    await asyncio.sleep(0.5)  # the last lines reach the file

    first, second = _json_lines(doomed.output()), _json_lines(rescuer.output())
    assert first and second, "workers not on a TTY write JSON lines"
    assert all({"event", "level", "timestamp", "logger"} <= line.keys() for line in first + second)

    crash = [x for x in first if "failpoint" in x["event"]]
    assert len(crash) == 1 and "exiting hard" in crash[0]["event"]
    assert (crash[0]["workflow_id"], crash[0]["run_id"], crash[0]["step"], crash[0]["attempt"]) \
        == (handle.id, run_id, "post_adjustments", 1)

    retry = [x for x in second if x["event"].startswith("retrying post_adjustments")]
    assert len(retry) == 1, second
    assert retry[0]["level"] == "warning" and retry[0]["attempt"] == 2
    assert (retry[0]["workflow_id"], retry[0]["run_id"]) == (handle.id, run_id)
    assert retry[0]["resumed_from"] is not None and retry[0]["resumed_from"] >= 2

    handed = [x for x in second if x["event"].startswith("handed over to a person")]
    assert len(handed) == 1
    assert handed[0]["handover_no"] == 1 and handed[0]["failed_step"] == "gate_before_debit_notes"
    assert handed[0]["workflow_id"] == handle.id and handed[0]["step"] == "record_handover"
    decided = [x for x in second if x["event"].startswith("decision on handover #1")]
    assert decided and decided[0]["decision"] == "resume" and decided[0]["by"] == "asha"
    finished = [x for x in second if x["event"] == "run finished: completed"]
    assert finished and finished[0]["workflow_id"] == handle.id and finished[0]["run_id"] == run_id

    # Nothing of any document at info: not one line of an invoice's text appears in the logs.
    documents = await pool.fetch(
        "SELECT document FROM invoices WHERE business_date = $1::text::date AND warehouse = $2",
        day, warehouse)
    everything = doomed.output() + rescuer.output()
    distinctive = {ln.strip() for d in documents for ln in d["document"].splitlines()
                   if len(ln.strip()) > 12}
    assert distinctive and not [ln for ln in distinctive if ln in everything]
