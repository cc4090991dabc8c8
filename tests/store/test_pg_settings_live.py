"""The session's embedded Postgres runs with the night's settings (recon/runtime/pg_settings.py)."""

import asyncpg

from recon.runtime.pg_settings import PG_SETTINGS


async def test_the_embedded_server_runs_with_the_night_settings(pool: asyncpg.Pool) -> None:
    assert await pool.fetchval("SHOW wal_buffers") == PG_SETTINGS["wal_buffers"]
    assert await pool.fetchval("SHOW max_wal_size") == PG_SETTINGS["max_wal_size"]
    assert await pool.fetchval("SHOW shared_buffers") == PG_SETTINGS["shared_buffers"]
