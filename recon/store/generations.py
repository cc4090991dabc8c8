"""Generations of a night (docs/design.md §4): each undo execution raises the night's generation
by one row in `run_generations`, and everything posted afterwards goes under that generation's
keys. The count lives in Postgres (`recon_generation`), so every attempt reads the same number.
"""

from __future__ import annotations

import asyncpg


async def current_generation(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> int:
    """1 + the undos this night has seen."""
    return await conn.fetchval("SELECT recon_generation($1)", workflow_id)


async def open_next_generation(pool: asyncpg.Pool, workflow_id: str, raised_by: str) -> int:
    """One row per undo execution (`raised_by` is its Temporal run id): a retried activity
    raises the generation once. Returns the generation now current."""
    await pool.execute(
        "INSERT INTO run_generations (workflow_id, raised_by) VALUES ($1, $2)"
        " ON CONFLICT DO NOTHING",
        workflow_id, raised_by,
    )
    return int(await pool.fetchval("SELECT recon_generation($1)", workflow_id))
