"""Work recorded with asynchronous commits is on disk before an activity says it is done.

Step 2's offline groups commit without waiting for the disk (a crash of the worker loses none,
and a Postgres crash only the last fraction of a second, which the next attempt reads again).
But once the activity has told Temporal the batch is done there is no next attempt: a Postgres
crash in that moment lost the invoices (`recon chaos`: a night Completed with 290 of 300
extracted). `make_durable` flushes the WAL past every earlier commit; here the WAL writer is
told to wait 10 s, so only the flush itself can bring the commit to disk in time."""

from __future__ import annotations

import asyncio

import asyncpg

from recon.store.db import commit_asynchronously, make_durable
from recon.store.fences import take_fence


async def test_make_durable_brings_asynchronous_commits_to_disk(pool: asyncpg.Pool) -> None:
    await pool.execute("CREATE TABLE IF NOT EXISTS durability_probe (n bigint)")
    await pool.execute("ALTER SYSTEM SET wal_writer_delay = '10s'")
    await pool.execute("SELECT pg_reload_conf()")
    try:
        await asyncio.sleep(0.5)  # the WAL writer takes the new delay
        fence = await take_fence(pool, "durability-probe:extract")
        async with pool.acquire() as conn:
            async with conn.transaction():
                await commit_asynchronously(conn)
                await conn.execute("INSERT INTO durability_probe VALUES (1)")
            committed = await conn.fetchval("SELECT pg_current_wal_insert_lsn()")
            await make_durable(conn, fence)
            flushed = await conn.fetchval("SELECT pg_current_wal_flush_lsn()")
        assert flushed >= committed, f"WAL flushed to {flushed}, the commit is at {committed}"
    finally:
        await pool.execute("ALTER SYSTEM RESET wal_writer_delay")
        await pool.execute("SELECT pg_reload_conf()")
        await pool.execute("DROP TABLE IF EXISTS durability_probe")
        await pool.execute("DELETE FROM fences WHERE scope = 'durability-probe:extract'")
