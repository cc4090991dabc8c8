"""The plain cost of a night's work: what the same work costs done the simplest fast way, with no
workflow engine, no keys to check, no crash safety. The night's wall time divided by this is the
price of doing it crash-proof; it is the floor `bench/night.py` measures itself against.

Two parts, measured after the run on the run's own data:
  - parse: every document of the night through the offline parser, in one process, one loop;
  - copy: every row the run wrote (all tables keyed by its workflow id) written again with one
    COPY per table into logged scratch tables without indexes, then dropped.
Reading the rows out of Postgres first is not counted.

The tables are read from the catalog (every base table with a `workflow_id` column), not listed
here: a list written before issue 21 left out the acceptances and fingerprints that step 5 has
written since (a 100k night: ~350k rows), so the plain cost no longer counted all the night's work.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import asyncpg

from recon.documents.extraction.offline import parse_document
from recon.documents.extraction.schema import UnreadableInvoice

# Every base table of the schema that keys its rows by the run (the scratch tables excluded).
_RUN_TABLES = """
SELECT c.table_name FROM information_schema.columns c
JOIN information_schema.tables t ON t.table_schema = c.table_schema
                                AND t.table_name = c.table_name
WHERE c.table_schema = current_schema() AND c.column_name = 'workflow_id'
  AND t.table_type = 'BASE TABLE' AND c.table_name NOT LIKE 'plain\\_%'
ORDER BY c.table_name
"""


async def run_tables(conn: asyncpg.Connection) -> list[str]:
    """The tables a run writes its rows to, by their `workflow_id` column."""
    return [r["table_name"] for r in await conn.fetch(_RUN_TABLES)]


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
    read = {t: await conn.fetch(f"SELECT * FROM {t} WHERE workflow_id = $1", workflow_id)
            for t in await run_tables(conn)}
    tables = {t: rows for t, rows in read.items() if rows}  # a table the night left empty: no COPY
    for t in tables:
        await conn.execute(f"DROP TABLE IF EXISTS plain_{t}; CREATE TABLE plain_{t} (LIKE {t})")
    started = time.perf_counter()
    for t, rows in tables.items():
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
