"""The model bill is exact: whole nights against a scripted OpenAI-compatible server on loopback
(tests/fakes/openai_server.py) that counts, on its own clock, every request it receives.

- a night of 429-with-Retry-After, 500, 503, a timeout, malformed JSON, a refusal and an answer
  outside the schema: every request the server saw is one `model_calls` row, no invoice is
  answered twice, every Retry-After is respected, and the bill adds up;
- one invoice that always fails: it alone is parked (its errors as evidence), the night finishes;
- a provider failing for most invoices: the step hands over with the exact errors, nothing parked.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import date

import asyncpg
from temporalio.client import Client

from recon.domain.keys import number_of
from recon.ops.inspection import inspect_run
from recon.tools.seed import seed_night
from tests.fakes.openai_server import API_KEY, MODEL, ScriptedOpenAI
from tests.helpers import inprocess_worker, recon_cli, settings_for, start, wait_for

PRICE_IN, PRICE_OUT = 0.15, 0.60  # USD per million tokens


def _model_settings(queue: str, fake: ScriptedOpenAI, **changes):
    values = dict(openai_api_key=API_KEY, openai_base_url=fake.base_url, model=MODEL,
                  model_timeout=1.5, model_retry_wait=0.2, model_price_in=PRICE_IN,
                  model_price_out=PRICE_OUT, extract_batch_size=10)
    return settings_for(queue, **(values | changes))


async def _readable(pool: asyncpg.Pool, day: str, warehouse: str, unreadable: list[str]) -> list[str]:
    rows = await pool.fetch(
        "SELECT invoice_no FROM invoices WHERE business_date = $1 AND warehouse = $2"
        " ORDER BY invoice_no", date.fromisoformat(day), warehouse)
    numbers = set(map(number_of, unreadable))  # the seed names them by reference
    return [r["invoice_no"] for r in rows if r["invoice_no"] not in numbers]


async def _calls(pool: asyncpg.Pool, wf: str) -> list[dict]:
    """By the supplier's number, as the scripted server knows them (the run's rows carry the
    reference `S001:INV-…`)."""
    return [dict(r, invoice_no=number_of(r["invoice_no"])) for r in await pool.fetch(
        "SELECT invoice_no, outcome, status_code, error, prompt_tokens, completion_tokens"
        " FROM model_calls WHERE workflow_id = $1 ORDER BY id", wf)]


async def test_a_scripted_bad_night_is_billed_exactly(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    day, warehouse, queue = night
    seeded = await seed_night(pool, day, warehouse, invoices=40, mismatches=4)
    inv = await _readable(pool, day, warehouse, seeded.unreadable)
    # Not the invoices that carry the seeded mismatches' lines: those must still extract.
    script = {
        inv[0]: ("429:1.5", "ok"),
        inv[1]: ("500", "ok"),
        inv[2]: ("503:1", "429:0.5", "ok"),
        inv[3]: ("timeout", "ok"),
        inv[4]: ("malformed",),
        inv[5]: ("refuse",),
        inv[6]: ("invalid",),
    }
    with ScriptedOpenAI(hang=4.0) as fake:
        for invoice_no, steps in script.items():
            fake.script(invoice_no, *steps)
        settings = _model_settings(queue, fake)
        async with inprocess_worker(settings):
            handle = await start(client, settings, day, warehouse)
            result = await asyncio.wait_for(handle.result(), 120)
        received = fake.snapshot()

    assert result.status == "Completed"
    calls = await _calls(pool, handle.id)
    # Every request the server saw is on record, and nothing else is.
    assert len(calls) == len(received)
    assert Counter(c["invoice_no"] for c in calls) == Counter(r.invoice_no for r in received)
    assert not any(c["outcome"] == "sent" for c in calls)
    # No invoice answered twice (on the server, and in our book).
    assert fake.answered_twice() == []
    answered = Counter(c["invoice_no"] for c in calls if c["outcome"] == "answered")
    assert max(answered.values()) == 1
    assert len(answered) == 40  # every invoice got exactly one answer, good or bad

    # Each scripted invoice: the outcomes in order, with status codes kept.
    def outcomes(invoice_no: str) -> list[tuple[str, int | None]]:
        return [(c["outcome"], c["status_code"]) for c in calls if c["invoice_no"] == invoice_no]

    assert outcomes(inv[0]) == [("error", 429), ("answered", 200)]
    assert outcomes(inv[1]) == [("error", 500), ("answered", 200)]
    assert outcomes(inv[2]) == [("error", 503), ("error", 429), ("answered", 200)]
    assert outcomes(inv[3]) == [("error", None), ("answered", 200)]
    assert "timed out" in next(c["error"] for c in calls if c["invoice_no"] == inv[3]).lower()
    for invoice_no in inv[4:7]:
        assert outcomes(invoice_no) == [("answered", 200)]

    # Retry-After, measured on the server's clock: the next request came no sooner than asked.
    for invoice_no in script:
        seen = [r for r in received if r.invoice_no == invoice_no]
        for before, after in zip(seen, seen[1:], strict=False):
            if ":" in before.step:
                asked = float(before.step.split(":")[1])
                assert before.answered is not None
                assert after.arrived - before.answered >= asked, (invoice_no, before.step)

    # The bad answers are parked with their reasons; the rest extracted.
    parked = {number_of(r["invoice_no"]): r["reason"] for r in await pool.fetch(
        "SELECT invoice_no, reason FROM parked_items WHERE workflow_id = $1 AND step ="
        " 'extract_lines'", handle.id)}
    assert "not JSON" in parked[inv[4]]
    assert parked[inv[5]].startswith("model refused")
    assert "schema" in parked[inv[6]]
    assert set(map(number_of, seeded.unreadable)) <= set(parked)
    for invoice_no in inv[:4]:
        assert invoice_no not in parked

    # The bill: tokens as the server counted them, priced per million.
    facts = await inspect_run(client, pool, handle.id)
    tokens_in = sum(r.prompt_tokens for r in received if r.status == 200 and r.step != "timeout")
    tokens_out = sum(r.completion_tokens for r in received
                     if r.status == 200 and r.step != "timeout")
    assert facts["model_calls"] == 40
    assert facts["model_requests"] == len(received)
    assert facts["model_tokens"] == tokens_in + tokens_out
    expected_cost = (tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1_000_000
    assert abs(facts["model_cost_usd"] - expected_cost) < 1e-6
    summary = await pool.fetchval(
        "SELECT body FROM outbox WHERE workflow_id = $1 AND kind = 'summary'", handle.id)
    assert f"for {len(received)} requests" in summary


async def test_one_invoice_that_always_fails_is_parked_alone(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    day, warehouse, queue = night
    seeded = await seed_night(pool, day, warehouse, invoices=40, mismatches=4)
    doomed = (await _readable(pool, day, warehouse, seeded.unreadable))[3]
    with ScriptedOpenAI() as fake:
        fake.always(doomed, "503")
        settings = _model_settings(queue, fake)
        async with inprocess_worker(settings):
            handle = await start(client, settings, day, warehouse)
            result = await asyncio.wait_for(handle.result(), 120)
        received = fake.snapshot()

    assert result.status == "Completed"
    assert [r.status for r in received if r.invoice_no == doomed] == [503, 503, 503]
    # Its siblings were each asked once: nobody was cancelled or asked again because of it.
    others = Counter(r.invoice_no for r in received if r.invoice_no != doomed)
    assert set(others.values()) == {1} and len(others) == 39
    row = next(r for r in await pool.fetch(
        "SELECT invoice_no, reason, evidence FROM parked_items WHERE workflow_id = $1", handle.id)
        if number_of(r["invoice_no"]) == doomed)
    assert row["reason"].startswith("model failed 3 times: 503")
    assert row["evidence"].splitlines() == [
        f"try {n}: 503 InternalServerError: scripted 503" for n in (1, 2, 3)]
    extracted = await pool.fetchval(
        "SELECT count(*) FROM extractions WHERE workflow_id = $1", handle.id)
    assert extracted == 40 - 1 - len(seeded.unreadable)
    calls = await _calls(pool, handle.id)
    assert len(calls) == len(received)
    assert Counter(c["outcome"] for c in calls) == {"answered": 39, "error": 3}


async def test_a_provider_down_for_most_invoices_hands_over_with_the_errors(
    pool: asyncpg.Pool, client: Client, night
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=20, mismatches=2)
    invoices = await _readable(pool, day, warehouse, [])
    with ScriptedOpenAI() as fake:
        for invoice_no in invoices[:8]:
            fake.always(invoice_no, "502")
        settings = _model_settings(queue, fake, extract_batch_size=20)
        async with inprocess_worker(settings):
            handle = await start(client, settings, day, warehouse)
            note = await wait_for(lambda: pool.fetchrow(
                "SELECT * FROM handovers WHERE workflow_id = $1", handle.id), 60, "a handover")
            await handle.terminate("test over")
    assert note["step"] == "extract_lines"
    assert note["error_type"] == "ModelUnavailable"
    assert "failed 8 of 20 invoices after 3 tries" in note["error_message"]
    assert "502" in note["error_message"]
    parked = await pool.fetchval(
        "SELECT count(*) FROM parked_items WHERE workflow_id = $1 AND reason LIKE 'model failed%'",
        handle.id)
    assert parked == 0  # a retry after the fix asks them again


async def test_an_error_that_stops_the_step_records_siblings_in_flight_as_cancelled(
    pool: asyncpg.Pool, client: Client, night, stack
) -> None:
    """A wrong key (401) is not temporary: the step stops at once and hands over; the seven
    sibling requests still in flight are on record as `cancelled`, nothing is left `sent`."""
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=20, mismatches=2)
    invoices = await _readable(pool, day, warehouse, [])
    with ScriptedOpenAI(delay=1.0, hang=3.0) as fake:
        for invoice_no in invoices[:7]:
            fake.script(invoice_no, "timeout")
        fake.script(invoices[7], "401")
        settings = _model_settings(queue, fake, extract_batch_size=20, model_timeout=10.0)
        async with inprocess_worker(settings):
            handle = await start(client, settings, day, warehouse)
            note = await wait_for(lambda: pool.fetchrow(
                "SELECT * FROM handovers WHERE workflow_id = $1", handle.id), 60, "a handover")
            await handle.terminate("test over")
        received = fake.snapshot()
    assert note["error_type"] == "AuthenticationError"
    calls = await _calls(pool, handle.id)
    assert len(calls) == len(received) == 8
    outcome = {c["invoice_no"]: (c["outcome"], c["status_code"]) for c in calls}
    assert outcome[invoices[7]] == ("error", 401)
    assert {outcome[inv] for inv in invoices[:7]} == {("cancelled", None)}
    status = recon_cli(stack.env(), "status", handle.id)
    assert "Model bill: US$0.0000 for 8 requests (1 failed, 7 cancelled), 0 answered" in status.stdout
