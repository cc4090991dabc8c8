"""`recon demo`: the crash story, end to end, on the embedded stack.

Seed one night, start two workers on one task queue (as production runs them); the one that takes
step 7 dies hard at entry 24, the other one finishes the run. Then show what happened: each
step's attempts, the restart, and that the ledger holds each entry once. With `--ledger tryton`
the night also posts into a real Tryton made for the demo (recon/ledger/tryton_setup.py), and the
worker dies after Tryton took move 24 and before recon wrote that down: the other worker looks the
key up there and posts only the rest.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from recon.domain.models import PostResult
from recon.domain.steps import STEPS
from recon.mail.demo_mail import deliver_demo_mail
from recon.mail.smtp_sink import MailSink
from recon.ops.approvers import ensure_tool_approver
from recon.ops.history import read_history
from recon.ops.inspection import inspect_run
from recon.runtime import logs
from recon.runtime.config import state_dir
from recon.runtime.devstack import RunningStack, embedded_stack
from recon.runtime.embedded import free_port, port_open
from recon.runtime.temporal_client import connect
from recon.store.chaos import ledger_rows
from recon.store.db import connect_pool, migrate
from recon.tools.seed import seed_night

DEMO_DATE, DEMO_WAREHOUSE = "2026-10-13", "ldh"
DEMO_INVOICES, DEMO_MISMATCHES, CRASH_AT = 312, 40, 24
DEMO_POST_BATCH = 5  # step 7 commits entries five at a time: entry 24 dies in the fifth batch
DEMO_QUEUE = "recon-demo"


@dataclass
class DemoOutcome:
    facts: dict
    crash_to_finish: float
    crash_exit_code: int
    resumed_after: int  # the entry the retry's last heartbeat reached (Temporal's record)
    walked_again: int  # entries after it the retry found posted, by key, and did not post
    mail: str = ""  # what the loopback mail server received for the run
    committed_at_kill: int = 0  # ledger rows committed when the worker died
    inserted_by_retry: int = 0


def _spawn_worker(stack: RunningStack, log: Path, **env: str) -> subprocess.Popen:
    full = dict(os.environ)
    full.update(
        TEMPORAL_ADDRESS=stack.temporal.address, DATABASE_URL=stack.postgres.url,
        RECON_TASK_QUEUE=DEMO_QUEUE, RECON_POST_BATCH="5", PYTHONUNBUFFERED="1", **env,
    )
    full.pop("OPENAI_API_KEY", None)
    full.pop("OPENAI_BASE_URL", None)
    return subprocess.Popen(
        [sys.executable, "-m", "recon.cli", "worker", "--no-sender"], env=full, stdout=log.open("wb"),
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )


async def _wait_first_exit(workers: list[subprocess.Popen], timeout: float) -> tuple[int, int]:
    """(worker number from 1, exit code) of the first worker to exit."""
    deadline = time.monotonic() + timeout
    while True:
        for n, process in enumerate(workers, 1):
            if process.poll() is not None:
                return n, process.returncode
        if time.monotonic() > deadline:
            raise TimeoutError(f"no worker reached entry {CRASH_AT} in {timeout}s")
        await asyncio.sleep(0.01)


def start_tryton(state: Path, console: Console) -> tuple[subprocess.Popen, dict[str, str]]:
    """A Tryton for the demo in `state/tryton`: made (~15 s), started on a free port, as `recon
    chaos --ledger tryton` makes its own; returns the server and the worker settings."""
    from recon.tools.chaos.ledger import start

    console.print("making a Tryton database for the demo (company, chart, fiscal year) ...")
    server, env = start(state / "tryton", int(DEMO_DATE[:4]))
    console.print(f"Tryton at {env['RECON_LEDGER_URL']} (log {state / 'tryton' / 'trytond.log'})",
                  markup=False, highlight=False)
    return server, env


async def tryton_moves(pool, workflow_id: str, env: dict[str, str]) -> str:
    """What Tryton holds for the night's live entries, asked of Tryton by key."""
    from recon.ledger.tryton import TrytonLedger
    from recon.ledger.tryton_setup import JOURNAL_CODE, PAYABLE_CODE, VARIANCE_CODE
    from recon.store.ledger_postings import to_verify

    keys = [r["reference"] for r in await to_verify(pool, workflow_id, None)]
    ledger = TrytonLedger(env["RECON_LEDGER_URL"], "admin",
                          Path(env["RECON_LEDGER_SECRET_FILE"]).read_text().strip(),
                          payable=PAYABLE_CODE, variance=VARIANCE_CODE, journal=JOURNAL_CODE)
    held = await ledger.find(keys)
    once = sum(1 for found in held.values() if len(found) == 1)
    moves = sum(len(found) for found in held.values())
    return f"Tryton: {moves} moves for {len(keys)} entries, {once} keys held exactly once"


async def play(stack: RunningStack, state: Path, console: Console,
               ledger_env: dict[str, str] | None = None) -> DemoOutcome:
    settings = stack.settings()
    pool = await connect_pool(stack.postgres.url)
    workers: list[subprocess.Popen] = []
    try:
        await migrate(pool)
        approver = await ensure_tool_approver(pool, "demo", "demo@distributor.example",
                                              state / "approver.pem")
        console.print(f"approver {approver.name} (admin): decide on this stack with "
                      f"RECON_APPROVER_KEY={state / 'approver.pem'}", markup=False, highlight=False)
        seeded = await seed_night(pool, DEMO_DATE, DEMO_WAREHOUSE, DEMO_INVOICES, DEMO_MISMATCHES)
        console.print(
            f"seeded {seeded.invoices} invoices for {DEMO_DATE} at {DEMO_WAREHOUSE}: "
            f"{len(seeded.adjustments)} adjustments due, {len(seeded.unreadable)} unreadable, "
            f"{len(seeded.no_po_invoices)} citing no PO, {len(seeded.unknown_sku_lines)} unknown SKUs"
        )
        client = await connect(settings)
        # Both workers carry the failpoint; it fires only in step 7's first attempt, so whichever
        # worker takes step 7 dies there and the other one finishes the retry.
        crash = (f"post_adjustments_landed:{CRASH_AT}:first" if ledger_env
                 else f"post_adjustments:{CRASH_AT}:first")
        workers += [_spawn_worker(stack, state / f"worker-{n}.log", RECON_FAILPOINTS=crash,
                                  **(ledger_env or {}))
                    for n in (1, 2)]
        from starter import start_night

        settings = replace(settings, task_queue=DEMO_QUEUE, post_batch_size=DEMO_POST_BATCH)
        handle = await start_night(client, settings, DEMO_DATE, DEMO_WAREHOUSE)
        console.print(f"started {handle.id}; workers 1 and 2 poll its task queue, and the one "
                      f"that runs step 7 will die at entry {CRASH_AT}")
        dead, code = await _wait_first_exit(workers, 120)
        crashed_at = time.monotonic()
        posted = await ledger_rows(pool, handle.id)
        console.print(f"worker {dead} exited hard (code {code}) with {posted} entries committed; "
                      f"worker {3 - dead} carries on")
        await asyncio.wait_for(handle.result(), 120)
        finished = time.monotonic() - crashed_at
        mail = await deliver_demo_mail(stack, pool, handle.id) if stack.mail else ""
        if ledger_env:
            console.print(await tryton_moves(pool, handle.id, ledger_env), markup=False,
                          highlight=False)
        facts = await inspect_run(client, pool, handle.id)
        history = await read_history(handle)
        result = PostResult(expected=0, inserted=0, already_there=0)
        payloads = history.completed_results.get("post_adjustments")
        if payloads:
            result = (await client.data_converter.decode(payloads[-1].payloads, [PostResult]))[0]
        facts["steps_table"] = [
            (name, history.steps[name].max_attempt if name in history.steps else 0,
             history.steps[name].activities if name in history.steps else 0)
            for name in STEPS
        ]
        return DemoOutcome(facts, finished, code, result.started_at, result.walked_again, mail,
                           committed_at_kill=posted, inserted_by_retry=result.inserted)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
                try:
                    worker.wait(10)
                except subprocess.TimeoutExpired:
                    worker.kill()
        await pool.close()


def show(outcome: DemoOutcome, console: Console) -> None:
    table = Table(title="Nightly reconciliation recon-2026-10-13-ldh")
    table.add_column("#", justify="right")
    table.add_column("step")
    table.add_column("activities", justify="right")
    table.add_column("attempts", justify="right")
    table.add_column("note")
    for n, (name, attempts, activities) in enumerate(outcome.facts["steps_table"], 1):
        note = ""
        if name == "post_adjustments":
            note = (f"worker killed at entry {CRASH_AT} with {outcome.committed_at_kill} "
                    f"committed; attempt {attempts} resumed at entry "
                    f"{outcome.committed_at_kill + 1}")
        table.add_row(str(n), name, str(activities), str(attempts), note)
    console.print(table)
    f = outcome.facts
    twice = f["ledger_rows"] - f["distinct_keys"]
    console.print(
        f"step 7: the worker died at entry {CRASH_AT} with entries 1-{outcome.committed_at_kill} "
        f"committed (in batches of {DEMO_POST_BATCH}; entry {CRASH_AT}'s batch rolled back). "
        f"Attempt 2 began after entry {outcome.resumed_after}, the last progress its heartbeat "
        f"had reported; it found entries {outcome.resumed_after + 1}-"
        f"{outcome.resumed_after + outcome.walked_again} already posted (their keys), posted "
        f"nothing for them, and posted {outcome.inserted_by_retry} new from entry "
        f"{outcome.committed_at_kill + 1}: {twice} posted twice.", markup=False, highlight=False)
    console.print(f"ledger rows: {f['ledger_rows']}, distinct keys: {f['distinct_keys']}")
    console.print(f"model calls: {f['model_calls']} (invoices: {f['invoices']}, "
                  f"not {2 * f['invoices']})")
    console.print(f"invoice reads: {f['invoice_reads']}")
    console.print(f"stock movements: {f['stock_movements']}, outbox rows: {f['outbox_rows']}, "
                  f"parked items: {f['parked']}")
    console.print(f"activity retries: {f['activity_retries']}, history events: "
                  f"{f['history_events']}")
    console.print(f"crash to finished run: {outcome.crash_to_finish:.1f} s")
    if outcome.mail:
        console.print(outcome.mail, markup=False, highlight=False)


def run_demo(exit_at_once: bool, console: Console, ledger: str | None = None) -> DemoOutcome:
    """`ledger`: None for the built-in ledger alone, "tryton" to post into a Tryton too."""
    state = state_dir() / "demo"
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True, exist_ok=True)
    # The story on stdout; this process's JSON log lines in a file (each worker has its own).
    log = state / "demo.log"
    logs.to_file(log)
    console.print(f"logs: {log} (this process), {state}/worker-1.log and worker-2.log (JSON lines)",
                  markup=False, highlight=False)
    port = 7233 if not port_open(7233) else free_port()
    ui_port = 8233 if not port_open(8233) else free_port()
    with embedded_stack(state, port, ui_port, persistent=False) as stack, \
            MailSink(state / "mail") as mail:
        stack.mail = mail
        console.print(f"Temporal Web UI: {stack.ui_url}  (Temporal at {stack.temporal.address})")
        if stack.codec is not None:
            console.print(f"payloads encrypted with key {stack.codec.service.keyring.current_id}; "
                          f"the Web UI decodes them through {stack.codec.url()}",
                          markup=False, highlight=False)
        server, ledger_env = start_tryton(state, console) if ledger == "tryton" else (None, None)
        try:
            outcome = asyncio.run(play(stack, state, console, ledger_env))
        finally:
            if server is not None:
                server.terminate()
                server.wait(15)
        show(outcome, console)
        if not exit_at_once and sys.stdin.isatty():
            console.print(f"\nOpen {stack.ui_url}/namespaces/default/workflows to read the run's "
                          "history. Ctrl-C stops the servers.")
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                console.print("stopping")
    return outcome
