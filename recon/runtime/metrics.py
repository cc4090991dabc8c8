"""Metrics: the SDK's own (task latencies, polls, slots, ...) and ours, on one Prometheus endpoint.

`RECON_METRICS_PORT` set: the worker builds a Temporal Runtime whose telemetry serves
`http://RECON_METRICS_HOST:PORT/metrics` (loopback unless the host says otherwise,
docs/settings.md), and every meter (the worker's, `activity.metric_meter()`,
`workflow.metric_meter()`) reports there. Unset: no endpoint, the SDK default runtime.

Our names (all documented in README "Metrics"):
  recon_runs_total{outcome}              nights finished: completed | undone | failed
  recon_step_retries_total{step}         activity attempts after the first (crash, timeout, error)
  recon_step_failures_total{step,error}  attempts that raised
  recon_items_parked_total{step}         invoices / lines parked for a person
  recon_ledger_entries_posted_total      ledger entries inserted by step attempts that finished
                                         (an attempt that crashed after committing some is not
                                         counted: the ledger is the record, see the gauge below)
  recon_stock_movements_posted_total     stock movements inserted
  recon_handovers_total{step}            handovers written
  recon_handovers_waiting                gauge: handovers with no decision yet (from Postgres)
  recon_outbox_pending                   gauge: outbox rows not sent yet (from Postgres)
  recon_model_requests                   gauge: requests recorded in model_calls (from Postgres)
  recon_ledger_entries                   gauge: rows in ledger_entries (from Postgres)
The gauges are read from Postgres by each worker every RECON_METRICS_REFRESH seconds, so they
are true for the whole system, not for one process.
"""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg
from temporalio.common import MetricMeter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from recon.domain.settings_table import default_of
from recon.store.gauges import read_gauges

_runtime: Runtime | None = None


def bind_address(host: str, port: int) -> str:
    """`host:port`, with an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def runtime_for(port: int, host: str = default_of("RECON_METRICS_HOST")) -> Runtime | None:
    """One Runtime per process (the SDK allows many but each has its own threads)."""
    global _runtime
    if port <= 0:
        return None
    if _runtime is None:
        _runtime = Runtime(telemetry=TelemetryConfig(
            metrics=PrometheusConfig(bind_address=bind_address(host, port),
                                     counters_total_suffix=True)
        ))
    return _runtime


async def refresh_gauges(pool: asyncpg.Pool, meter: MetricMeter) -> None:
    for name, (description, value) in (await read_gauges(pool)).items():
        meter.create_gauge(name, description).set(value)


async def keep_gauges(pool: asyncpg.Pool, meter: MetricMeter, every: float) -> None:
    """Refresh the gauges until cancelled; a failed read skips one round, never the worker."""
    while True:
        with contextlib.suppress(asyncpg.PostgresError, OSError, asyncpg.InterfaceError):
            await refresh_gauges(pool, meter)
        await asyncio.sleep(every)
