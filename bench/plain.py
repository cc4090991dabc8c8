"""The plain cost of a night's work: what the same work costs done the simplest fast way, with no
workflow engine, no keys to check, no crash safety. The night's wall time divided by this is the
price of doing it crash-proof; it is the floor `bench/night.py` measures itself against.

Two parts, measured after the run on the run's own data:
  - parse: every document of the night through the offline parser, in one process, one loop;
  - copy: every row the run wrote (all tables keyed by its workflow id) written again with one
    COPY per table into logged scratch tables without indexes, then dropped.
Reading the rows out of Postgres first is not counted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import asyncpg

from recon.documents.extraction.offline import parse_document
from recon.documents.extraction.schema import UnreadableInvoice

RUN_TABLES = (
    "run_invoices", "invoice_reads", "model_calls", "extractions", "invoice_lines",
    "line_matches", "stock_snapshots", "comparisons", "mismatches", "parked_items",
    "ledger_entries", "stock_movements", "outbox",
)


@dataclass
class Plain:
    documents: int
    parse_seconds: float
    rows: int
    copy_seconds: float

    @property
    def seconds(self) -> float:
        return self.parse_seconds + self.copy_seconds


def parse_all(documents: list[str]) -> float:
    started = time.perf_counter()
    for text in documents:
        try:
            parse_document(text).model_dump_json()
        except UnreadableInvoice:
            pass
    return time.perf_counter() - started


async def copy_all(conn: asyncpg.Connection, workflow_id: str) -> tuple[int, float]:
    tables = {t: await conn.fetch(f"SELECT * FROM {t} WHERE workflow_id = $1", workflow_id)
              for t in RUN_TABLES}
    for t in tables:
        await conn.execute(f"DROP TABLE IF EXISTS plain_{t}; CREATE TABLE plain_{t} (LIKE {t})")
    started = time.perf_counter()
    for t, rows in tables.items():
        if rows:
            await conn.copy_records_to_table(f"plain_{t}", records=[tuple(r) for r in rows],
                                              columns=list(rows[0].keys()))
    seconds = time.perf_counter() - started
    for t in tables:
        await conn.execute(f"DROP TABLE plain_{t}")
    return sum(len(r) for r in tables.values()), seconds


async def plain_cost(pool: asyncpg.Pool, workflow_id: str) -> Plain:
    documents = [r["document"] for r in await pool.fetch(
        "SELECT document FROM run_invoices WHERE workflow_id = $1 ORDER BY seq", workflow_id)]
    parse_seconds = parse_all(documents)
    async with pool.acquire() as conn:
        rows, copy_seconds = await copy_all(conn, workflow_id)
    return Plain(len(documents), parse_seconds, rows, copy_seconds)
