"""One key rule in two languages: Python's `generation_key` and SQL's `recon_key` agree."""

from __future__ import annotations

import asyncpg

from recon.keys import generation_key, redo_workflow_id


async def test_python_and_sql_build_the_same_generation_keys(pool: asyncpg.Pool) -> None:
    bases = ["recon-2026-10-13-ldh:INV-1:2:qty", "recon-2026-10-13-ldh:stock:INV-1:2",
             "recon-2026-10-13-ldh:debit-note:S001", "recon-x:summary"]
    for base in bases:
        for generation in (1, 2, 3, 11):
            sql = await pool.fetchval("SELECT recon_key($1, $2)", base, generation)
            assert sql == generation_key(base, generation)
    assert generation_key(bases[0], 1) == bases[0], "generation 1 keeps the original shape"
    assert generation_key(bases[0], 2) == bases[0] + ":g2"


def test_redo_ids_carry_scope_and_generation() -> None:
    assert redo_workflow_id("recon-2026-10-13-ldh", None, 2) == "redo-recon-2026-10-13-ldh-g2"
    assert redo_workflow_id("recon-2026-10-13-ldh", "S042", 3) == \
        "redo-recon-2026-10-13-ldh-supplier-S042-g3"
