"""Generations of a night (docs/design.md §4): each authorised undo raises the night's generation
by one row in `run_generations`, and everything posted afterwards goes under that generation's
keys. The count lives in Postgres (`recon_generation`), so every attempt reads the same number.
A generation is opened only by an authorised undo: recon/store/mandates.py (`open_next_generation`).
"""

from __future__ import annotations

import asyncpg


async def current_generation(conn: asyncpg.Connection | asyncpg.Pool, workflow_id: str) -> int:
    """1 + the undos this night has seen."""
    return await conn.fetchval("SELECT recon_generation($1)", workflow_id)
