"""A source that cannot be reached is an outage: retried for the outage window and ridden out when
it comes back, else handed over in its own words; a source that cannot be used as configured (its
password not there) hands over at once. Real worker processes, nights through Temporal."""

from __future__ import annotations

from pathlib import Path

import asyncpg
from temporalio.client import Client

from recon.store import sources
from tests.helpers import first_handover, settings_for, start, wait_for


async def test_a_missing_drop_folder_is_ridden_out_when_it_comes_back(
        pool: asyncpg.Pool, client: Client, night, tmp_path: Path, spawn_worker) -> None:
    day, wh, queue = night
    drop = tmp_path / "drop"  # an unmounted share: not there yet
    await sources.add(pool, wh, "folder", f"folder:{drop}", {}, None)
    worker = spawn_worker(queue, RECON_OUTAGE_WINDOW="120")
    handle = await start(client, settings_for(queue), day, wh)

    async def failed_once() -> bool:
        return f"folder {drop} unreachable (No such file or directory)" in worker.output()
    await wait_for(failed_once, 120, "the fetch to meet the missing folder")
    drop.mkdir()  # the share is back
    summary = await handle.result()
    assert summary.status == "Completed"
    assert await pool.fetchval("SELECT count(*) FROM handovers WHERE workflow_id = $1", handle.id) == 0


async def test_an_outage_longer_than_the_window_hands_over_in_its_words(
        pool: asyncpg.Pool, client: Client, night, tmp_path: Path, spawn_worker) -> None:
    day, wh, queue = night
    drop = tmp_path / "never-mounted"
    await sources.add(pool, wh, "folder", f"folder:{drop}", {}, None)
    spawn_worker(queue, RECON_OUTAGE_WINDOW="3")
    handle = await start(client, settings_for(queue), day, wh)
    note = await first_handover(pool, handle.id)
    assert (note["step"], note["error_type"]) == ("fetch_sources", "TemporaryErrorsExhausted")
    assert note["attempts"] > 1
    assert f"folder {drop} unreachable (No such file or directory) since" in note["error_message"]
    await handle.terminate("the test has seen the handover")


async def test_a_password_that_is_not_there_hands_over_at_once(
        pool: asyncpg.Pool, client: Client, night, spawn_worker) -> None:
    day, wh, queue = night
    await sources.add(pool, wh, "imap", "imap://ap@127.0.0.1:1/INBOX", {}, "env:RECON_TEST_NO_SUCH_PW")
    spawn_worker(queue, RECON_OUTAGE_WINDOW="120")
    handle = await start(client, settings_for(queue), day, wh)
    note = await first_handover(pool, handle.id, timeout=60)
    assert (note["step"], note["error_type"], note["attempts"]) == ("fetch_sources", "SourceRefused", 1)
    assert "password variable RECON_TEST_NO_SUCH_PW is not set" in note["error_message"]
    await handle.terminate("the test has seen the handover")
