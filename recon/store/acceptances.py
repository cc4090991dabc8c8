"""Acceptances: what each night took of each PO line's open quantity (docs/design.md §12).

Step 5 writes them with the night's comparisons (recon/store/weighing.py). The open quantity a
later night sees counts only live ones, so an undo of a night, or of one supplier of it, opens
its quantities again (`retire`), and the stock booking of a redo takes them again (`revive`).
The partial unique index `acceptances_one_live_claim` refuses a second live claim of an invoice
line, whichever night makes it: a revive that would make one fails loudly instead.
"""

from __future__ import annotations

import asyncpg


async def _one_flip_at_a_time(conn: asyncpg.Connection, workflow_id: str) -> None:
    """In the caller's transaction: one retire or revive of a night at a time. Two attempts of an
    undo (or of a redo's booking) can flip the same rows together, and a multi-row UPDATE locks
    its rows in whatever order its plan visits them, so two of them could each hold a row the
    other waits for. One lock per night cannot be taken in two orders; it is cheaper than
    locking a night's rows (~250k for a 100k night) in key order first."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"acceptances:{workflow_id}")


async def retire(conn: asyncpg.Connection, workflow_id: str, supplier_id: str | None,
                 lines: list[tuple[str, int]] | None = None) -> int:
    """An undo reversed these lines' stock (or, with `lines` None, everything of the night or of
    one supplier): their quantities are open again. Idempotent."""
    async with conn.transaction():
        await _one_flip_at_a_time(conn, workflow_id)
        return await _retire(conn, workflow_id, supplier_id, lines)


async def _retire(conn: asyncpg.Connection, workflow_id: str, supplier_id: str | None,
                  lines: list[tuple[str, int]] | None) -> int:
    if lines is None:
        status = await conn.execute(
            "UPDATE acceptances SET live = false"
            " WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2) AND live",
            workflow_id, supplier_id)
    else:
        status = await conn.execute(
            "UPDATE acceptances a SET live = false"
            " FROM unnest($2::text[], $3::int[]) AS x(invoice_no, line_no)"
            " WHERE a.workflow_id = $1 AND a.invoice_no = x.invoice_no"
            "   AND a.line_no = x.line_no AND a.live",
            workflow_id, [i for i, _ in lines], [n for _, n in lines])
    return int(status.split()[-1])


async def revive(conn: asyncpg.Connection, workflow_id: str, supplier_id: str | None) -> int:
    """A redo booked the night's stock again (or one supplier's): its acceptances are live again.
    Idempotent; a line another night claimed meanwhile raises a unique violation."""
    async with conn.transaction():
        await _one_flip_at_a_time(conn, workflow_id)
        status = await conn.execute(
            "UPDATE acceptances SET live = true"
            " WHERE workflow_id = $1 AND ($2::text IS NULL OR supplier_id = $2) AND NOT live",
            workflow_id, supplier_id)
    return int(status.split()[-1])
