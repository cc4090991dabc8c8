"""The worker's Prometheus gauges, read from Postgres: true for the whole system, not for one
process (each worker reads them every RECON_METRICS_REFRESH seconds)."""

from __future__ import annotations

import asyncpg

# gauge name -> (description, statement); the names are documented in README "Metrics".
GAUGES = {
    "recon_handovers_waiting": ("handovers with no decision yet",
                                "SELECT count(*) FROM handovers WHERE decision IS NULL"),
    "recon_outbox_pending": ("outbox rows not sent yet",
                             "SELECT count(*) FROM outbox WHERE sent_at IS NULL"),
    "recon_model_requests": ("model requests recorded", "SELECT count(*) FROM model_calls"),
    "recon_ledger_entries": ("rows in the ledger (entries and reversals)",
                             "SELECT count(*) FROM ledger_entries"),
}


async def read_gauges(pool: asyncpg.Pool | asyncpg.Connection) -> dict[str, tuple[str, int]]:
    """name -> (description, value) for every gauge, one count at a time."""
    return {name: (description, int(await pool.fetchval(sql)))
            for name, (description, sql) in GAUGES.items()}
