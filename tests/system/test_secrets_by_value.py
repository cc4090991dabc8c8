"""Secrets are masked by value (issue 39, item 5; docs/design.md §11 "Where data meets a reader").

The model's provider answers a wrong key with a 401 that quotes it whole ("Incorrect API key
provided: Bearer sk-..."), a shape no pattern of secrets knows. The step stops and hands over;
the key is nowhere the worker writes: the handover in Postgres, its mail in the outbox, the
run's memo and history in Temporal, the worker's log. The password of the SMTP server and the
codec token the worker holds are masked the same way."""

from __future__ import annotations

import secrets

import asyncpg
import pytest
from temporalio.client import Client

from recon.tools.seed import seed_night
from tests.fakes.openai_server import ScriptedOpenAI
from tests.helpers import settings_for, start, wait_for

pytestmark = pytest.mark.slow


async def test_a_provider_that_echoes_the_key_never_spreads_it(
    pool: asyncpg.Pool, client: Client, night, spawn_worker
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=6, mismatches=1)
    key = "sk-proj-" + secrets.token_urlsafe(32)
    with ScriptedOpenAI(echo_key=True) as fake:
        worker = spawn_worker(queue, **{**fake.env(), "OPENAI_API_KEY": key},
                              RECON_LOG_LEVEL="DEBUG")
        handle = await start(client, settings_for(queue), day, warehouse)
        note = await wait_for(lambda: pool.fetchrow(
            "SELECT * FROM handovers WHERE workflow_id = $1", handle.id), 90, "a handover")
        received = fake.snapshot()
        assert received, "the worker asked the model"

        assert note["error_type"] == "AuthenticationError"
        assert "Incorrect API key provided: Bearer ***" in note["error_message"], note["error_message"]
        rows = await pool.fetch(
            "SELECT h::text AS t FROM handovers h WHERE workflow_id = $1"
            " UNION ALL SELECT o::text FROM outbox o WHERE workflow_id = $1"
            " UNION ALL SELECT m::text FROM model_calls m WHERE workflow_id = $1"
            " UNION ALL SELECT p::text FROM parked_items p WHERE workflow_id = $1", handle.id)
        stored = "\n".join(r["t"] for r in rows)
        assert "Decision needed" in stored, "the handover's mail is queued"
        assert key not in stored

        memo = await (await handle.describe()).memo()
        history = await handle.fetch_history()
        await handle.terminate("test over")
    assert "Incorrect API key" in str(memo) and key not in str(memo)
    assert "Incorrect API key" in history.to_json() and key not in history.to_json()
    log = worker.output()
    assert "Incorrect API key" in log, log[-2000:]
    assert key not in log
