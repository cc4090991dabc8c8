"""Batch mode of step 2 against a loopback server speaking the Batch API (tests/fakes/batch_server.py),
which counts every request it bills, batch lines and interactive ones alike.

- a night in batch mode: one batch, every invoice answered once, the bill half the interactive
  price of the same tokens, the books as the documents state them;
- a cut reply to `batches.create`: the next attempt finds the batch by its metadata, creates none;
- a worker killed after the create and before the record: still one batch;
- a deadline reached with part answered: the batch is cancelled, its answers kept, only the rest
  asked interactively, none twice.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import datetime, timedelta

import asyncpg
import pytest
from temporalio.client import Client

from recon.documents.extraction.offline import parse_document
from recon.documents.extraction.schema import UnreadableInvoice
from recon.domain.keys import number_of
from recon.ops.inspection import inspect_run
from recon.store.model_bill import model_bill
from recon.tools.seed import seed_night
from tests.fakes.batch_server import BatchOpenAI
from tests.fakes.openai_server import API_KEY, MODEL
from tests.helpers import inprocess_worker, recon_cli, settings_for, start, wait_for
from tests.histories.replay import replayer

PRICE_IN, PRICE_OUT = 0.15, 0.60
INVOICES = 40


def _settings(queue: str, fake: BatchOpenAI, **changes):
    values = dict(openai_api_key=API_KEY, openai_base_url=fake.base_url, model=MODEL,
                  model_timeout=3.0, model_retry_wait=0.2, model_price_in=PRICE_IN,
                  model_price_out=PRICE_OUT, extract_batch_size=10, model_mode="batch",
                  model_batch_poll_seconds=0.5)
    return settings_for(queue, **(values | changes))


async def _books(pool: asyncpg.Pool, wf: str) -> list[tuple]:
    """The night's ledger as an outsider reads it, without the run's id in the keys."""
    rows = await pool.fetch("SELECT invoice_no, supplier_id, amount_paise FROM ledger_entries"
                            " WHERE workflow_id = $1 ORDER BY invoice_no, amount_paise", wf)
    return [tuple(r) for r in rows]


async def _lines(pool: asyncpg.Pool, wf: str) -> list[tuple]:
    rows = await pool.fetch("SELECT invoice_no, line_no, sku, qty, unit_price_paise FROM"
                            " invoice_lines WHERE workflow_id = $1 ORDER BY 1, 2", wf)
    return [tuple(r) for r in rows]


async def _document_lines(pool: asyncpg.Pool, wf: str) -> list[tuple]:
    rows = await pool.fetch("SELECT invoice_no, document FROM run_invoices WHERE workflow_id = $1", wf)
    lines = []
    for r in rows:
        try:
            read = parse_document(r["document"])
        except UnreadableInvoice:
            continue
        lines += [(r["invoice_no"], ln.line_no, ln.sku, ln.quantity, ln.unit_price_paise)
                  for ln in read.lines]
    return sorted(lines)


async def _night(pool, client, settings, day, warehouse):
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        result = await asyncio.wait_for(handle.result(), 180)
    assert result.status == "Completed"
    return handle.id


async def test_a_batch_night_costs_half_and_books_the_same(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=INVOICES, mismatches=4)
    with BatchOpenAI(completion_delay=1.0) as fake:
        batch_wf = await _night(pool, client, _settings(queue, fake), day, warehouse)
        assert fake.creates == 1  # one batch for the night
        assert fake.interactive() == []  # nothing asked interactively
        assert fake.answered_twice() == []
        batch_billed = sum(fake.billed().values())
        tokens_in, tokens_out = fake.batch_tokens
    facts = await inspect_run(client, pool, batch_wf)

    # The bill: the tokens the server billed, at half the interactive price of the same tokens.
    assert facts["model_requests_batch"] == facts["model_requests"] == batch_billed == INVOICES
    assert facts["model_requests_interactive"] == 0
    assert len(facts["model_batches"]) == 1
    assert facts["model_tokens"] == tokens_in + tokens_out
    interactive_price = (tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1_000_000
    assert 0 < facts["model_cost_usd"] <= 0.5 * interactive_price + 1e-6
    assert abs(facts["model_cost_usd"] - 0.5 * interactive_price) < 1e-6
    # The books: every invoice's lines as its document states them (what an interactive night
    # books: the fake answers both ways from the same reading), the seeded mismatches posted.
    assert await _lines(pool, batch_wf) == await _document_lines(pool, batch_wf)
    assert len(await _books(pool, batch_wf)) == facts["ledger_rows"] > 0
    outcomes = Counter(r["outcome"] for r in await pool.fetch(
        "SELECT outcome FROM model_calls WHERE workflow_id = $1 AND batch_key IS NOT NULL", batch_wf))
    assert outcomes == Counter({"answered": batch_billed})
    summary = await pool.fetchval(
        "SELECT body FROM outbox WHERE workflow_id = $1 AND kind = 'summary'", batch_wf)
    assert "in 1 batch (batch_" in summary


async def test_a_cut_reply_to_create_finds_the_batch_and_creates_none(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=INVOICES, mismatches=4)
    with BatchOpenAI(completion_delay=0.5) as fake:
        fake.cut_create_replies = 1
        wf = await _night(pool, client, _settings(queue, fake), day, warehouse)
        assert fake.creates == 1  # the cut one: the next attempt found it by its metadata
        assert fake.lists >= 1
        assert fake.interactive() == []
        assert fake.answered_twice() == []
        (batch_id,) = fake.batches
    stored = await pool.fetchval("SELECT batch_id FROM model_batches WHERE workflow_id = $1", wf)
    assert stored == batch_id


@pytest.mark.parametrize("ending", ["deadline", "expired", "failed"])
async def test_a_batch_that_does_not_finish_keeps_its_answers_and_asks_only_the_rest(
    pool: asyncpg.Pool, client: Client, night, stack, ending: str
) -> None:
    """The deadline passes with 25 of 40 answered (the batch is cancelled, slowly), the batch
    expires with 25 answered, or fails at validation with none: the answers it has are kept and
    paid once, only the rest are asked interactively, and the night completes."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=INVOICES, mismatches=4)
    kept = 0 if ending == "failed" else 25
    changes = {}
    with BatchOpenAI(completion_delay=0.5) as fake:
        fake.answer_only = kept  # the batch answers these, then never finishes by itself
        if ending == "deadline":
            fake.cancel_takes = 1.0
            changes["model_batch_deadline"] = (datetime.now() + timedelta(seconds=20)).strftime(
                "%H:%M:%S")
        elif ending == "expired":
            fake.expire_after = 6.0
        else:
            fake.fail_next = True
        settings = _settings(queue, fake, **changes)
        async with inprocess_worker(settings):
            handle = await start(client, settings, day, warehouse)
            wf = handle.id
            if ending != "failed":  # what `recon status` says while the night waits
                waiting = f"waiting for the model's batch ({kept} of {INVOICES} answered)"
                await wait_for(lambda: _waiting(pool, wf, waiting), 60, waiting, every=0.2)
            if ending == "deadline":  # the Web UI's pending activity says it (its last look's
                await wait_for(lambda: _pending_says(handle, waiting), 60,  # words), and
                               f"the pending wait to say {waiting}", every=0.2)
                # `recon status` says so, as a person reads it
                status = await asyncio.to_thread(recon_cli, stack.env(), "status", wf)
                assert f"Waiting for the model's batch ({kept} of {INVOICES} answered)" in \
                    status.stdout, status.stdout + status.stderr
            result = await asyncio.wait_for(handle.result(), 180)
        assert result.status == "Completed"
        history = await handle.fetch_history()
        assert fake.creates == 1
        (batch,) = fake.batches.values()
        assert batch.status == {"deadline": "cancelled"}.get(ending, ending)
        in_batch = {number_of(k) for k in fake.batch_billed}
        asked = Counter(fake.interactive())
        assert len(in_batch) == kept
        assert set(asked) & in_batch == set()  # none of the batch's answers asked again
        assert len(asked) == INVOICES - kept
        assert fake.answered_twice() == []
    rows = await pool.fetch("SELECT invoice_no, outcome, batch_key FROM model_calls"
                            " WHERE workflow_id = $1", wf)
    unanswered = {"deadline": "cancelled", "expired": "error", "failed": "error"}[ending]
    batch_rows = Counter(r["outcome"] for r in rows if r["batch_key"])
    assert batch_rows == Counter({"answered": kept, unanswered: INVOICES - kept}) - Counter()
    interactive = Counter(r["outcome"] for r in rows if not r["batch_key"])
    assert interactive == Counter({"answered": INVOICES - kept})
    facts = await inspect_run(client, pool, wf)
    assert facts["model_requests_batch"] == INVOICES
    assert facts["model_requests_interactive"] == INVOICES - kept
    assert facts["model_batches"] == [batch.id]
    assert facts["model_calls"] == INVOICES
    # The wait: one activity in the history however many looks it took (the retries are not
    # events), and the batch branch replays.
    scheduled = [e for e in history.events if e.activity_task_scheduled_event_attributes.activity_type.name
                 == "wait_for_model_batch"]
    started = [e.activity_task_started_event_attributes.attempt for e in history.events
               if e.HasField("activity_task_started_event_attributes")
               and e.activity_task_started_event_attributes.scheduled_event_id == scheduled[0].event_id]
    assert len(scheduled) == 1
    if ending != "failed":
        assert started[0] >= 5, started
    replayed = await replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None, replayed.replay_failure


async def _pending_says(handle, text: str) -> bool:
    """What the Web UI (and `temporal workflow describe`) shows of the pending wait: the last
    look's words, "waiting for the model's batch (N of M answered)"."""
    described = await handle.describe()
    return any(text in p.last_failure.message
               for p in described.raw_description.pending_activities)


async def _waiting(pool: asyncpg.Pool, wf: str, text: str) -> bool:
    return (await model_bill(pool, wf)).waiting() == text


KILLED_BY_FAILPOINT = ["before_upload", "after_upload", "after_create", "mid_read", "after_read"]
KILLED_FROM_OUTSIDE = ["during_create", "during_wait"]


@pytest.mark.parametrize("point", KILLED_BY_FAILPOINT + KILLED_FROM_OUTSIDE)
async def test_a_worker_killed_anywhere_in_the_batch_makes_one_batch_paid_once(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, point: str
) -> None:
    """SIGKILL at each point of submit, wait and read: before and after the upload; during the
    create (the fake made the batch and holds its reply); after the create, its id not yet
    recorded; during the wait (between two looks); mid-read (before the read commits) and after
    the read committed, before it was reported. The successor finds what was done, and the night
    has one batch, each invoice answered once and recorded once, nothing asked interactively,
    and the books a crash-free night keeps (every invoice's lines as its document states them)."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=INVOICES, mismatches=4)
    poll = 2.0 if point == "during_wait" else 0.5
    with BatchOpenAI(completion_delay=8.0 if point == "during_wait" else 0.5) as fake:
        env = fake.env() | {"RECON_HEARTBEAT_SECONDS": "2"}
        if point in KILLED_BY_FAILPOINT:
            env_doomed = env | {"RECON_FAILPOINTS": f"model_batch:{point}:kill"}
        else:
            env_doomed = env
        if point == "during_create":
            fake.hold_create_reply = 30.0  # the batch is made, its reply held: the kill lands here
        doomed = spawn_worker(queue, **env_doomed)
        settings = settings_for(queue, model_mode="batch", model_batch_poll_seconds=poll,
                                heartbeat_seconds=2)
        handle = await start(client, settings, day, warehouse)
        if point == "during_create":
            await wait_for(lambda: asyncio.sleep(0, fake.creates == 1), 120, "the create", every=0.1)
            doomed.kill()
        elif point == "during_wait":
            # Right after a look: the next one is `poll` seconds away, so the kill lands between
            # two looks (a kill inside a look costs that look's timeout, not a second batch).
            await wait_for(lambda: asyncio.sleep(0, fake.looks >= 2
                                                 and time.time() - fake.last_look < 0.5),
                           120, "the second look", every=0.05)
            doomed.kill()
            looks_before = fake.looks
        await wait_for(lambda: asyncio.sleep(0, doomed.process.poll() is not None), 120,
                       f"the worker to die at {point}", every=0.1)
        assert doomed.process.returncode == -9
        spawn_worker(queue, **env)
        result = await asyncio.wait_for(handle.result(), 300)
        assert result.status == "Completed"
        figures = await handle.query("progress")  # the memo's figures, asked of a live worker
        if point == "during_wait":
            assert fake.looks > looks_before  # the successor went on looking
        assert fake.creates == 1
        assert len(fake.batches) == 1
        assert fake.interactive() == []
        assert fake.answered_twice() == []
        assert sum(fake.billed().values()) == INVOICES
    outcomes = Counter(r["outcome"] for r in await pool.fetch(
        "SELECT outcome FROM model_calls WHERE workflow_id = $1", handle.id))
    assert outcomes == Counter({"answered": INVOICES})
    assert await pool.fetchval("SELECT count(*) FROM model_batches WHERE workflow_id = $1"
                               " AND read_at IS NOT NULL", handle.id) == 1
    assert await _lines(pool, handle.id) == await _document_lines(pool, handle.id)
    facts = await inspect_run(client, pool, handle.id)
    assert facts["model_requests_batch"] == INVOICES
    assert len(await _books(pool, handle.id)) == facts["ledger_rows"] > 0
    await _figures_as_recorded(pool, figures, handle.id)


async def _figures_as_recorded(pool: asyncpg.Pool, figures: dict, wf: str) -> None:
    """The night's figures (the summary's, the memo's) are what its records hold: a read that was
    reported by a later attempt than the one that read counts the same."""
    extracted = await pool.fetchval("SELECT count(DISTINCT invoice_no) FROM invoice_lines"
                                    " WHERE workflow_id = $1", wf)
    parked = await pool.fetchval("SELECT count(*) FROM parked_items WHERE workflow_id = $1", wf)
    assert (figures["extracted"], figures["parked"]) == (extracted, parked)


async def test_error_lines_follow_the_interactive_rules(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    """A line the batch answered with a 500 is asked again interactively (once it answers); a
    line refused for its document (400) parks the invoice and is never asked again."""
    day, warehouse, queue = night
    seeded = await seed_night(pool, day, warehouse, invoices=INVOICES, mismatches=4)
    rows = await pool.fetch("SELECT invoice_no FROM invoices WHERE business_date = $1 AND"
                            " warehouse = $2 ORDER BY invoice_no", datetime.fromisoformat(day).date(),
                            warehouse)
    unreadable = set(map(number_of, seeded.unreadable))
    flaky, refused = [r["invoice_no"] for r in rows if r["invoice_no"] not in unreadable][:2]
    with BatchOpenAI(completion_delay=0.5) as fake:
        fake.script(flaky, "500", "ok")
        fake.script(refused, "400")
        wf = await _night(pool, client, _settings(queue, fake), day, warehouse)
        assert fake.interactive() == [flaky]
        assert fake.answered_twice() == []
    calls = [(number_of(r["invoice_no"]), r["outcome"], r["status_code"], r["batch_key"] is not None)
             for r in await pool.fetch("SELECT invoice_no, outcome, status_code, batch_key FROM"
                                       " model_calls WHERE workflow_id = $1 ORDER BY id", wf)]
    assert [c[1:] for c in calls if c[0] == flaky] == [("error", 500, True), ("answered", 200, False)]
    assert [c[1:] for c in calls if c[0] == refused] == [("error", 400, True)]
    parked = {number_of(r["invoice_no"]): r["reason"] for r in await pool.fetch(
        "SELECT invoice_no, reason FROM parked_items WHERE workflow_id = $1", wf)}
    assert parked[refused].startswith("model failed: the provider refused this document: 400")
    assert flaky not in parked


OUTAGE_SECONDS = 60.0


@pytest.mark.slow  # a 60 s outage, honestly long; the night is small
async def test_a_60_s_outage_right_after_the_create_still_makes_one_batch(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    """The create lands, then the provider is unreachable for 60 s: every request (the create's
    reply too) answered 503 or its connection closed without a reply. The attempts look for the
    batch, and wait for it, until the provider is back; they create none, and the night books
    what a night without an outage books, each invoice paid once."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=INVOICES, mismatches=4)
    with BatchOpenAI(completion_delay=0.5) as fake:
        fake.outage_after_create = OUTAGE_SECONDS
        fake.outage_cuts = True
        began = time.monotonic()
        wf = await _night(pool, client, _settings(queue, fake), day, warehouse)
        assert time.monotonic() - began >= OUTAGE_SECONDS  # the outage was in the night
        assert fake.refused >= 4  # refused both ways (503s and closed connections)
        assert fake.creates == 1
        assert fake.interactive() == []
        assert fake.answered_twice() == []
        assert sum(fake.billed().values()) == INVOICES
    assert await pool.fetchval("SELECT count(*) FROM model_calls WHERE workflow_id = $1"
                               " AND outcome = 'answered'", wf) == INVOICES
    assert await _lines(pool, wf) == await _document_lines(pool, wf)


@pytest.mark.slow  # two whole 312-invoice nights
async def test_the_seed_night_in_each_mode(pool: asyncpg.Pool, client: Client, night) -> None:
    """The seed's night (312 invoices) in batch mode and, on a second warehouse seeded alike,
    interactively: one batch, and the batch bill at most half of the interactive one per token
    (the two nights' documents differ by a few characters, so it is compared per token)."""
    day, warehouse, queue = night
    measured = {}
    for mode, wh in (("batch", warehouse), ("interactive", f"{warehouse}i")):
        await seed_night(pool, day, wh, invoices=312)
        with BatchOpenAI(completion_delay=5.0) as fake:
            began = time.monotonic()
            wf = await _night(pool, client, _settings(f"{queue}{mode[0]}", fake, model_mode=mode),
                              day, wh)
            seconds = time.monotonic() - began
            assert fake.creates == (1 if mode == "batch" else 0)
            assert fake.answered_twice() == []
        facts = await inspect_run(client, pool, wf)
        measured[mode] = facts
        # The books a correct night keeps: every invoice's lines as its document states them (the
        # two warehouses are seeded with different mismatches, so their ledgers differ).
        assert await _lines(pool, wf) == await _document_lines(pool, wf)
        print(f"{mode}: {facts['model_requests']} requests, {facts['model_tokens']} tokens, "
              f"US${facts['model_cost_usd']:.6f}, {seconds:.1f} s (batch completion delay 5 s)")
    per_token = {m: f["model_cost_usd"] / f["model_tokens"] for m, f in measured.items()}
    assert per_token["batch"] <= 0.5 * per_token["interactive"] * 1.02
    assert measured["batch"]["model_requests_batch"] == measured["batch"]["model_requests"]
    assert len(measured["batch"]["model_batches"]) == 1


async def test_a_create_that_lands_after_the_timeout_is_not_made_twice(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    """The create's reply times out (3 s) and the batch is made only at 5 s: the scan right after
    the timeout finds nothing, and no attempt creates another until the first one has landed."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=INVOICES, mismatches=4)
    with BatchOpenAI(completion_delay=0.5) as fake:
        fake.create_lands_after = 5.0
        await _night(pool, client, _settings(queue, fake), day, warehouse)
        assert fake.creates == 1
        assert fake.interactive() == []
        assert fake.answered_twice() == []
