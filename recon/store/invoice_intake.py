"""What an import needs to know about invoices already stored: whether a night has started, which
(supplier, number) pairs are there and with which document, and replacing one.

A night has started once step 1 copied its working set (`run_invoices` under the night's workflow
id): from then on nothing added to `invoices` for that night would ever be reconciled, by any
rerun, reset or redo. Step 1 copies under the night's lock (`lock_run`), and an import takes the
same lock before it looks, so the two never cross: either the import commits first and step 1
copies it, or step 1 ran and the import sees it and is refused. A Temporal run that exists but
has not run step 1 yet will copy what the import adds, so the store's answer is the one that
decides (docs/design.md §1, "Imports and started nights").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import asyncpg

from recon.store.db import lock_run

IMPORT_LOCK = "recon:import"  # one import at a time: the nights it locks are then never crossed

_STORED = """
SELECT i.supplier_id, i.invoice_no, i.business_date, i.warehouse, i.document, i.source,
       i.file_name
FROM invoices i
JOIN unnest($1::text[], $2::text[]) AS x(s, n) ON i.supplier_id = x.s AND i.invoice_no = x.n
"""

_REPLACE = """
UPDATE invoices i SET business_date = $3, warehouse = $4, document = x.t, source = 'import',
       format = NULL, file_name = NULL, file_sha256 = NULL, issued_on = NULL
FROM unnest($1::text[], $2::text[], $5::text[]) AS x(s, n, t)
WHERE i.supplier_id = x.s AND i.invoice_no = x.n
"""


async def lock_for_import(conn: asyncpg.Connection) -> None:
    """Imports queue here, inside their transaction (the lock ends with it)."""
    await lock_run(conn, IMPORT_LOCK)


async def night_started(conn: asyncpg.Connection, workflow_id: str) -> bool:
    """Lock the night (as step 1 does) and say whether its working set exists. Call inside the
    import's transaction, after `lock_for_import`: the answer holds until it commits."""
    await lock_run(conn, workflow_id)
    return bool(await conn.fetchval(
        "SELECT recon_night_has_rows('run_invoices', $1)", workflow_id))


async def stored_invoices(conn: asyncpg.Connection,
                          keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], asyncpg.Record]:
    """The stored invoices among these (supplier_id, number) pairs, by pair."""
    if not keys:
        return {}
    rows = await conn.fetch(_STORED, [k[0] for k in keys], [k[1] for k in keys])
    return {(r["supplier_id"], r["invoice_no"]): r for r in rows}


async def replace_invoices(conn: asyncpg.Connection, day: date, warehouse: str,
                           rows: Sequence[tuple[str, str, str]]) -> None:
    """(supplier_id, number, document): the new document takes the stored one's place, on the
    night the import names; where it came from is recorded after (`document_files`)."""
    if rows:
        await conn.execute(_REPLACE, [r[0] for r in rows], [r[1] for r in rows], day,
                           warehouse, [r[2] for r in rows])
