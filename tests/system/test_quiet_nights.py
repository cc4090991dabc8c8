"""A night with no new invoices still runs (issue 38): it weighs what it carries from earlier
nights, claims what is due, and sends its summary. `recon run` and the schedule start it; only a
night with nothing at all to do is refused, with advice that is true.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from temporalio.client import Client

from tests.helpers import inprocess_worker, recon_cli, settings_for
from tests.system.test_across_nights import (
    PRICE,
    _adjustments,
    _bill,
    _booked,
    _day,
    _held,
    _order,
    _receive,
    _run,
    bills_ahead_of_their_goods,
)

pytestmark = pytest.mark.slow


async def test_held_lines_are_claimed_on_time_on_nights_with_no_new_invoices(
        stack, pool: asyncpg.Pool, client: Client, night) -> None:
    day, wh, queue = night
    await bills_ahead_of_their_goods(pool, day, wh)
    settings = settings_for(queue, gate_max_adjustment_share=1.0)
    env = stack.env(RECON_TASK_QUEUE=queue)
    async with inprocess_worker(settings):
        first = await _run(client, settings, day, wh)
        # Night 2 has no mail at all: `recon run` starts it as a person would.
        started = await asyncio.to_thread(recon_cli, env, "run", "--date", _day(day, 1),
                                          "--warehouse", wh, "--wait", timeout=180)
        assert started.returncode == 0, started.stdout + started.stderr
        second = f"recon-{_day(day, 1)}-{wh}"
        third = await _run(client, settings, _day(day, 2), wh)
        fourth = await _run(client, settings, _day(day, 3), wh)
    assert await _held(pool, first) == [(f"INV-{wh}-1", 1), (f"INV-{wh}-2", 1)]
    # Night 2: INV-1's goods came; it is claimed clean and booked that night, not a night late.
    assert (await _booked(pool, second))[(f"INV-{wh}-1", 1)] == 50
    assert await _held(pool, second) == [(f"INV-{wh}-2", 1)]
    assert await _held(pool, third) == [(f"INV-{wh}-2", 1)]
    # Night 4 closes INV-2's window (3 days) with no invoice of its own: claimed short on time.
    assert await _adjustments(pool, fourth) == [(f"INV-{wh}-2", 1, "qty", 30 * PRICE)]
    assert (await _booked(pool, fourth))[(f"INV-{wh}-2", 1)] == 20
    summary = await pool.fetchval("SELECT body FROM outbox WHERE key = $1", f"{fourth}:summary")
    assert "No new invoices; 1 held line claimed." in summary, summary


async def test_a_night_with_nothing_to_do_is_refused_with_true_advice(
        stack, pool: asyncpg.Pool, night) -> None:
    day, wh, queue = night
    refused = await asyncio.to_thread(recon_cli, stack.env(RECON_TASK_QUEUE=queue), "run",
                                      "--date", day, "--warehouse", wh)
    assert refused.returncode != 0
    line = refused.stderr.strip()
    assert "\n" not in line and "no invoices" in line and "no held lines" in line, line
    assert "recon import" in line, line


async def test_the_schedule_runs_a_quiet_night(stack, pool: asyncpg.Pool, client: Client,
                                               night) -> None:
    """A Sunday with no mail: the schedule's firing starts the night, which claims what came."""
    from datetime import UTC, datetime, timedelta

    from recon.domain.schedules import business_date_of
    from tests.helpers import wait_for

    _, wh, queue = night
    today = business_date_of(datetime.now(UTC), "Asia/Kolkata", 1)
    yesterday = (today - timedelta(days=1)).isoformat()
    await _order(pool, f"PO-{wh}-1", "S002", wh, yesterday, {"SKU-Q1": 10})
    await _receive(pool, f"PO-{wh}-1", "SKU-Q1", wh, 10, today.isoformat())  # came a day late
    await _bill(pool, f"INV-{wh}-1", "S002", wh, yesterday, f"PO-{wh}-1", [("SKU-Q1", 10)])
    settings = settings_for(queue)
    env = stack.env(RECON_TASK_QUEUE=queue)
    async with inprocess_worker(settings):
        held_night = await _run(client, settings, yesterday, wh)
        assert await _held(pool, held_night) == [(f"INV-{wh}-1", 1)]
        made = await asyncio.to_thread(recon_cli, env, "schedule", "create", "--warehouse", wh,
                                       "--at", "02:00", "--tz", "Asia/Kolkata")
        assert made.returncode == 0, made.stderr
        fired = await asyncio.to_thread(recon_cli, env, "schedule", "trigger", "--warehouse", wh)
        assert fired.returncode == 0, fired.stderr

        async def summary_sent():
            return await pool.fetchval(
                "SELECT body FROM outbox WHERE key LIKE $1 AND key <> $2",
                f"recon-%-{wh}:summary", f"{held_night}:summary")
        await wait_for(summary_sent, 120, "the scheduled quiet night to send its summary")
        deleted = await asyncio.to_thread(recon_cli, env, "schedule", "delete", "--warehouse", wh)
        assert deleted.returncode == 0, deleted.stderr
    quiet = await pool.fetchval(
        "SELECT workflow_id FROM line_matches WHERE carried_from = $1", held_night)
    assert quiet is not None and quiet != held_night
    assert (await _booked(pool, quiet))[(f"INV-{wh}-1", 1)] == 10, "claimed clean on time"
    summary = await pool.fetchval("SELECT body FROM outbox WHERE key = $1", f"{quiet}:summary")
    assert "No new invoices; 1 held line claimed." in summary, summary
