"""The worker's Prometheus endpoint after a real run: the SDK's own metrics and ours."""

from __future__ import annotations

import asyncio
import re
import urllib.request
from pathlib import Path

import asyncpg
from temporalio.client import Client

from recon.runtime.embedded import free_port
from recon.tools.seed import seed_night
from tests.helpers import settings_for, start, wait_for


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def _listening_on(port: int) -> set[str]:
    """The addresses a TCP socket listens on at this port (Linux /proc/net/tcp{,6})."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                if len(address) == 8:
                    found.add(".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0)))
                else:
                    found.add("::" if set(address) == {"0"} else address)
    return found


def _value(text: str, name: str, **labels: str) -> float | None:
    """The sample of `name` whose labels include `labels` (summed if several match)."""
    total, seen = 0.0, False
    for line in text.splitlines():
        match = re.fullmatch(rf"{name}(?:\{{(.*)\}})? (\S+)", line)
        if not match:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', match[1] or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total, seen = total + float(match[2]), True
    return total if seen else None


async def test_the_worker_exports_sdk_and_recon_metrics(
    pool: asyncpg.Pool, client: Client, night, spawn_worker, tmp_path: Path
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=60, mismatches=8)
    port = free_port()
    spawn_worker(queue, RECON_METRICS_PORT=str(port), RECON_METRICS_REFRESH="0.5",
                 RECON_FAILPOINTS="post_adjustments:3:temporary", RECON_POST_BATCH="2")
    handle = await start(client, settings_for(queue, post_batch_size=2), day, warehouse)
    await asyncio.wait_for(handle.result(), 60)

    async def scraped() -> str | None:
        try:
            text = await asyncio.to_thread(_scrape, port)
        except OSError:
            return None
        done = _value(text, "recon_runs_total") and _value(
            text, "temporal_workflow_completed_total", workflow_type="NightlyReconciliation")
        gauges_caught_up = (_value(text, "recon_ledger_entries") or 0) >= 8  # refresh lags ≤0.5 s
        return text if done and gauges_caught_up else None
    text = await wait_for(scraped, 20, "the run to show on the metrics endpoint", every=0.5)
    (tmp_path / "metrics.txt").write_text(text)  # kept for a look after the test

    assert _value(text, "recon_runs_total", outcome="completed") == 1
    assert _listening_on(port) == {"127.0.0.1"}, "loopback unless RECON_METRICS_HOST opens it"
    assert _value(text, "recon_step_retries_total", step="post_adjustments") == 1
    assert _value(text, "recon_step_failures_total", step="post_adjustments") == 1
    # Attempt 1 committed entries 1-2 and failed at 3; the counter counts finished attempts' inserts.
    assert _value(text, "recon_ledger_entries_posted_total") == 6
    assert _value(text, "recon_ledger_entries") >= 8  # the gauge counts the ledger itself
    assert _value(text, "recon_stock_movements_posted_total") >= 1
    for gauge in ("recon_handovers_waiting", "recon_outbox_pending", "recon_model_requests",
                  "recon_ledger_entries"):
        assert _value(text, gauge) is not None, gauge
    assert _value(text, "recon_model_requests") >= 60
    # The SDK's own metrics come through the same endpoint.
    assert _value(text, "temporal_workflow_completed_total", workflow_type="NightlyReconciliation") == 1
    assert _value(text, "temporal_activity_execution_failed_total", activity_type="post_adjustments") == 1
