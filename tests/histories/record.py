"""Record the histories that tests/workflows/test_histories.py replays: one command, its own embedded stack.

    uv run python tests/histories/record.py            # all of them
    uv run python tests/histories/record.py crash_and_resume handover_undo   # some

Run it after a deliberate change to workflow code (and a `workflow.patched` guard for runs that
are in flight: see docs/contributing.md, "Changing workflow code"), then commit the JSON files.
Each story runs for real: worker processes, a hard kill, a ledger that refuses entries, a
person's decision.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from temporalio.client import Client, WorkflowHandle  # noqa: E402

from recon.domain.models import Decision  # noqa: E402
from recon.ops.approvers import ensure_tool_approver, load_key, signed_decision  # noqa: E402
from recon.runtime.config import Settings, load_settings  # noqa: E402
from recon.runtime.embedded import EmbeddedPostgres, TemporalDevServer, free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402
from starter import start_night  # noqa: E402

HISTORIES = Path(__file__).resolve().parent
DAY = "2026-10-13"


class Recorder:
    def __init__(self, state: Path, pg_url: str, address: str) -> None:
        self.state, self.pg_url, self.address = state, pg_url, address
        self.workers: list[subprocess.Popen] = []
        self.client: Client
        self.pool = None

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "OPENAI_"))}
        env.update(DATABASE_URL=self.pg_url, TEMPORAL_ADDRESS=self.address,
                   RECON_HOME=str(self.state / "home"), RECON_LOG_FORMAT="json", **extra)
        return env

    def worker(self, queue: str, **extra: str) -> subprocess.Popen:
        log = open(self.state / f"worker-{len(self.workers)}.log", "wb")  # noqa: SIM115
        process = subprocess.Popen([sys.executable, "-m", "recon.cli", "worker"], cwd=ROOT,
                                   env=self.env(RECON_TASK_QUEUE=queue, **extra),
                                   stdout=log, stderr=subprocess.STDOUT)
        self.workers.append(process)
        return process

    def settings(self, queue: str, **changes) -> Settings:
        os.environ.update(DATABASE_URL=self.pg_url, TEMPORAL_ADDRESS=self.address)
        return replace(load_settings(), task_queue=queue, **changes)

    async def night(self, name: str, invoices: int = 40, mismatches: int = 5, **changes):
        queue = f"record-{name}"
        await seed_night(self.pool, DAY, name, invoices=invoices, mismatches=mismatches)
        settings = self.settings(queue, **changes)
        return queue, settings

    async def until(self, check: Callable[[], Awaitable[bool]], what: str, timeout: float = 60):
        deadline = asyncio.get_running_loop().time() + timeout
        while not await check():
            if asyncio.get_running_loop().time() > deadline:
                for log in sorted(self.state.glob("worker-*.log")):
                    print(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}")
                raise SystemExit(f"timed out waiting for {what}")
            await asyncio.sleep(0.2)

    async def awaiting(self, handle: WorkflowHandle, answered: int = 0) -> None:
        """Until the run waits on a handover after the first `answered` ones."""
        async def check() -> bool:
            try:
                progress = await handle.query("progress")
            except Exception:
                return False
            return progress["status"] == "AwaitingDecision" and progress["handovers"] > answered
        await self.until(check, f"{handle.id} to wait for a person")

    async def resume_until_done(self, handle: WorkflowHandle) -> None:
        """A later handover (the gate, after a step was accepted as it stood) is answered resume."""
        answered = 1
        while True:
            result = asyncio.ensure_future(handle.result())
            waiting = asyncio.ensure_future(self.awaiting(handle, answered))
            done, _ = await asyncio.wait({result, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if result in done:
                waiting.cancel()
                result.result()
                return
            result.cancel()
            await handle.execute_update("decide", await self.signed(handle.id, "resume",
                                                                    handover_no=answered + 1))
            answered += 1

    async def signed(self, run: str, decision: str, handover_no: int = 1,
                     note: str = "") -> Decision:
        """A decision signed by the recorder's own approver key, as `recon approve` signs."""
        key = self.state / "recorder.pem"
        await ensure_tool_approver(self.pool, "recorder", "recorder@distributor.example", key)
        return await signed_decision(self.pool, load_key(key), run=run, handover_no=handover_no,
                                     decision=decision, by="recorder", note=note, park=[])

    async def signed_undo(self, run: str, supplier: str | None = None):
        """An undo request signed by the recorder's approver key, as `recon undo` signs it."""
        from recon.domain.requests import UNDO
        from recon.ops.requests import signed_request

        key = self.state / "recorder.pem"
        await ensure_tool_approver(self.pool, "recorder", "recorder@distributor.example", key)
        return await signed_request(self.pool, load_key(key), UNDO, run=run, supplier=supplier,
                                    references=[], reason="recorded undo", by="recorder")

    async def save(self, name: str, workflow_id: str) -> None:
        history = await self.client.get_workflow_handle(workflow_id).fetch_history()
        (HISTORIES / f"{name}.json").write_text(history.to_json())
        # Workflow code reads its own id (child and key names derive from it): replay needs it.
        ids_file = HISTORIES / "workflow_ids.json"
        ids = json.loads(ids_file.read_text()) if ids_file.exists() else {}
        ids[name] = workflow_id
        ids_file.write_text(json.dumps(dict(sorted(ids.items())), indent=1) + "\n")
        print(f"recorded {name}.json ({len(history.events)} events)")


async def crash_and_resume(r: Recorder) -> None:
    queue, settings = await r.night("crashres", invoices=120, mismatches=40, post_batch_size=5)
    doomed = r.worker(queue, RECON_FAILPOINTS="post_adjustments:24", RECON_POST_BATCH="5")
    handle = await start_night(r.client, settings, DAY, "crashres")
    await asyncio.to_thread(doomed.wait, 90)
    r.worker(queue)
    await handle.result()
    await r.save("crash_and_resume", handle.id)


async def _refusing_ledger(r: Recorder, workflow_id: str, name: str, on: bool) -> None:
    if on:
        await r.pool.execute(f"""
            CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'ledger closed for audit'; END $$;
            CREATE TRIGGER {name} BEFORE INSERT ON ledger_entries FOR EACH ROW
            WHEN (NEW.workflow_id = '{workflow_id}') EXECUTE FUNCTION {name}();""")
    else:
        await r.pool.execute(f"DROP TRIGGER {name} ON ledger_entries; DROP FUNCTION {name}();")


async def _handover_at_step_7(r: Recorder, name: str, decision: str) -> None:
    """Step 7 fails for good (the ledger refuses), a person answers with `decision`."""
    queue, settings = await r.night(name)
    wid = f"recon-{DAY}-{name}"
    await _refusing_ledger(r, wid, f"refuse_{name}", True)
    r.worker(queue)
    handle = await start_night(r.client, settings, DAY, name)
    await r.awaiting(handle)
    await _refusing_ledger(r, wid, f"refuse_{name}", False)
    await handle.execute_update("decide", await r.signed(wid, decision,
                                                         note=f"recorded {decision}"))
    await r.resume_until_done(handle)
    await r.save(name.replace("ho", "handover_", 1), wid)


async def handover_resume(r: Recorder) -> None:
    await _handover_at_step_7(r, "horesume", "resume")


async def handover_retry(r: Recorder) -> None:
    await _handover_at_step_7(r, "horetry", "retry")


async def handover_undo(r: Recorder) -> None:
    await _handover_at_step_7(r, "houndo", "undo")


async def gate_resume(r: Recorder) -> None:
    queue, settings = await r.night("gateres")
    r.worker(queue, RECON_GATE_MAX_TOTAL_PAISE="100")  # the gate is the worker's policy
    handle = await start_night(r.client, settings, DAY, "gateres")
    await r.awaiting(handle)
    await handle.execute_update("decide", await r.signed(handle.id, "resume"))
    await handle.result()
    await r.save("gate_resume", handle.id)


async def _finished_run(r: Recorder, name: str) -> tuple[str, Settings]:
    queue, settings = await r.night(name)
    r.worker(queue)
    handle = await start_night(r.client, settings, DAY, name)
    await handle.result()
    return handle.id, settings


async def undo_run(r: Recorder) -> None:
    from recon.ops.undo import start_undo

    wid, settings = await _finished_run(r, "undorun")
    await start_undo(r.client, r.pool, settings, wid, None, [], "recorded undo",
                     await r.signed_undo(wid))
    await r.save("undo_run", f"undo-{wid}")


async def undo_supplier(r: Recorder) -> None:
    from recon.ops.undo import start_undo

    wid, settings = await _finished_run(r, "undosup")
    supplier = await r.pool.fetchval(
        "SELECT supplier_id FROM ledger_entries WHERE workflow_id = $1 ORDER BY reference LIMIT 1",
        wid)
    await start_undo(r.client, r.pool, settings, wid, supplier, [], "recorded undo",
                     await r.signed_undo(wid, supplier))
    undo = [w async for w in r.client.list_workflows(
        f"WorkflowType = 'UndoReconciliation' AND WorkflowId STARTS_WITH 'undo-{wid}'")]
    await r.save("undo_supplier", undo[0].id)


async def redo_run(r: Recorder) -> None:
    """A night undone, then redone: the redo's history (its signed request checked first)."""
    from recon.domain.requests import REDO
    from recon.ops.redo import start_redo
    from recon.ops.requests import signed_request
    from recon.ops.undo import start_undo

    wid, settings = await _finished_run(r, "redorun")
    await start_undo(r.client, r.pool, settings, wid, None, [], "recorded undo",
                     await r.signed_undo(wid))
    signed = await signed_request(r.pool, load_key(r.state / "recorder.pem"), REDO, run=wid,
                                  supplier=None, references=[], reason="recorded redo",
                                  by="recorder")
    handle, *_ = await start_redo(r.client, r.pool, settings, wid, None, "recorded redo", signed)
    await handle.result()
    await r.save("redo_run", handle.id)


async def scheduled_night(r: Recorder) -> None:
    from recon.ops import schedules

    queue, settings = await r.night("sched")
    r.worker(queue)
    await schedules.create(r.client, settings, "sched", "02:00", "Asia/Kolkata", paused=True)
    await schedules.backfill(r.client, "sched", __import__("datetime").date.fromisoformat(DAY),
                             __import__("datetime").date.fromisoformat(DAY))

    async def started() -> bool:
        found = [w async for w in r.client.list_workflows(
            "WorkflowType = 'NightlyStarter' AND TemporalScheduledById = 'recon-nightly-sched' "
            "AND ExecutionStatus = 'Completed'")]
        return bool(found)
    await r.until(started, "the scheduled starter to finish")
    starter = [w async for w in r.client.list_workflows(
        "WorkflowType = 'NightlyStarter' AND TemporalScheduledById = 'recon-nightly-sched'")][0]
    await r.save("scheduled_starter", starter.id)


async def sources_night(r: Recorder) -> None:
    """A night that fetches its own documents (step 1's `fetch_sources`): the ERP's exports and a
    drop folder of the examples, a worker killed between reading the 5th item and recording it."""
    import re

    from recon.sources.spec import parse
    from recon.store import sources

    name, examples = "srcnight", ROOT / "examples"
    exports, drop = r.state / "erp-exports", r.state / "drop"
    exports.mkdir()
    shutil.copytree(examples / "invoices", drop)
    for csv in ("suppliers.csv", "orders.csv", "receipts.csv"):
        text = (examples / "master-data" / csv).read_text().replace(",ldh,", f",{name},")
        (exports / csv).write_text(re.sub(r"(\d{4})-(\d{2})-(\d{2})", r"\3-\2-\1", text))
    old = os.path.getmtime(drop) - 60  # settled: taken at once
    for path in (*exports.iterdir(), *drop.iterdir()):
        os.utime(path, (old, old))
    for url, formats in ((f"erp:{exports}", {"date_format": "DD-MM-YYYY"}), (f"folder:{drop}", {})):
        spec = parse(url, **formats)
        await sources.add(r.pool, name, spec.kind, spec.url, spec.settings, spec.secret_ref)
    queue = f"record-{name}"
    doomed = r.worker(queue, RECON_FAILPOINTS="fetch_sources:5:first")
    handle = await start_night(r.client, r.settings(queue), DAY, name)
    await asyncio.to_thread(doomed.wait, 90)
    r.worker(queue)
    await handle.result()
    await r.save("sources_night", handle.id)


async def batch_night(r: Recorder) -> None:
    """A night in batch mode (`RECON_MODEL_MODE=batch`) against the loopback Batch API: step 2
    submits one batch, a worker is killed after the create and before its record (the successor
    finds the batch by its metadata), the wait looks several times (retries of one activity),
    and the read records the answers."""
    from tests.fakes.batch_server import BatchOpenAI

    with BatchOpenAI(completion_delay=20.0) as fake:  # long enough to be looked at often
        env = fake.env() | {"RECON_HEARTBEAT_SECONDS": "2"}
        queue, settings = await r.night("batchnight", model_mode="batch",
                                        model_batch_poll_seconds=0.5, heartbeat_seconds=2)
        doomed = r.worker(queue, RECON_FAILPOINTS="model_batch:after_create:kill", **env)
        handle = await start_night(r.client, settings, DAY, "batchnight")
        await asyncio.to_thread(doomed.wait, 90)
        r.worker(queue, **env)
        await handle.result()
        assert fake.creates == 1 and not fake.answered_twice(), "one batch, paid once"
    await r.save("batch_night", handle.id)


STORIES = {f.__name__: f for f in (crash_and_resume, handover_resume, handover_retry, handover_undo,
                                   gate_resume, undo_run, undo_supplier, redo_run,
                                   scheduled_night, sources_night, batch_night)}


async def main(names: list[str]) -> None:
    unknown = [n for n in names if n not in STORIES]
    if unknown:
        raise SystemExit(f"unknown stories {unknown}; choose from {', '.join(STORIES)}")
    state = Path(tempfile.mkdtemp(prefix="recon-record-"))
    postgres = EmbeddedPostgres(state)
    temporal = TemporalDevServer(state, port=free_port(), ui_port=free_port(), persistent=False)
    url = postgres.start()
    temporal.start()
    r = Recorder(state, url, temporal.address)
    try:
        r.pool = await connect_pool(url, max_size=10)
        await migrate(r.pool)
        r.client = await connect(r.settings("record"))
        for name in names or list(STORIES):
            await STORIES[name](r)
    finally:
        for process in r.workers:
            if process.poll() is None:
                process.kill()
                process.wait(10)
        if r.pool is not None:
            await r.pool.close()
        temporal.stop()
        postgres.stop()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    import signal

    def _stop(*_: object) -> None:  # clean up the servers on SIGTERM too, once
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(143)

    signal.signal(signal.SIGTERM, _stop)
    asyncio.run(main(sys.argv[1:]))
