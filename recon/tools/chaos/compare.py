"""Row-by-row comparison of two nights: what the crash-free control posted against what the night
under faults posted. Keys are normalised (the run's workflow id becomes `{run}`) so the nights may
carry different ids; timestamps, fence tokens and serial ids are left out because they are
*supposed* to differ. The model's requests are compared as a count per invoice: a crash must not
make us pay for an invoice twice.
"""

from __future__ import annotations

import re

import asyncpg

from recon.store import chaos

Rows = dict[tuple, dict]


def _normalise(value: object, workflow_id: str) -> object:
    return value.replace(workflow_id, "{run}") if isinstance(value, str) else value


async def snapshot(url: str, workflow_id: str) -> dict[str, Rows]:
    """Every compared row of one night, keyed by its normalised key."""
    conn = await asyncpg.connect(url, timeout=10)
    try:
        tables: dict[str, Rows] = {}
        for table, keys, columns in chaos.TABLES:
            records = await chaos.table_rows(conn, table, keys, columns, workflow_id)
            tables[table] = {
                tuple(_normalise(r[k], workflow_id) for k in keys):
                    {c: _normalise(r[c], workflow_id) for c in columns}
                for r in records
            }
        calls = await chaos.requests_per_invoice(conn, workflow_id)
        tables["model_calls"] = {(r["invoice_no"],): {"requests": r["requests"]} for r in calls}
        return tables
    finally:
        await conn.close()


async def month_snapshot(url: str, workflow_ids: list[str], warehouse: str) -> dict[str, Rows]:
    """Every compared row of a month's nights (keys led by their night's run id, which is the
    same in both databases), the lines held and accepted across nights where the database has
    those tables, and the warehouse's stock levels at the end."""
    month: dict[str, Rows] = {}
    for workflow_id in workflow_ids:
        for table, rows in (await snapshot(url, workflow_id)).items():
            month.setdefault(table, {}).update({(workflow_id, *k): v for k, v in rows.items()})
    conn = await asyncpg.connect(url, timeout=10)
    try:
        present = await chaos.existing_tables(conn, [t for t, _k, _c in
                                                            chaos.ACROSS_NIGHTS])
        for table, keys, columns in chaos.ACROSS_NIGHTS:
            if table not in present:
                continue
            rows = month.setdefault(table, {})
            for workflow_id in workflow_ids:
                for r in await chaos.table_rows(conn, table, keys, columns, workflow_id):
                    rows[(workflow_id, *(r[k] for k in keys))] = {c: r[c] for c in columns}
        month["stock_levels"] = {(r["sku"],): {"qty_on_hand": r["qty_on_hand"]}
                                 for r in await chaos.stock_levels(conn, warehouse)}
        return month
    finally:
        await conn.close()


_NIGHT_FOLDER = re.compile(r"sources-(control|chaos)\b")


async def sources_snapshot(url: str, warehouse: str) -> dict[str, Rows]:
    """What came in through the sources (`recon chaos --sources`): every document, message, item
    and master-data row, keyed (a row taken twice shows in its `copies`). Each night's folders
    are its own (`sources-control`, `sources-chaos`): that part of a path is normalised."""
    conn = await asyncpg.connect(url, timeout=10)
    try:
        tables: dict[str, Rows] = {}
        for table, width, query in chaos.SOURCE_ROWS:
            rows: Rows = {}
            for r in await chaos.source_rows(conn, query, warehouse):
                values = [_NIGHT_FOLDER.sub("sources-{night}", v) if isinstance(v, str) else v
                          for v in r.values()]
                rows[tuple(values[:width])] = dict(zip(list(r.keys())[width:], values[width:],
                                                       strict=True))
            tables[table] = rows
        return tables
    finally:
        await conn.close()


def counts(night: dict[str, Rows]) -> str:
    """One line: rows per table (model calls as the sum of requests)."""
    parts = [f"{table} {len(rows)}" for table, rows in night.items() if table != "model_calls"]
    requests = sum(row["requests"] for row in night["model_calls"].values())
    return ", ".join(parts + [f"model requests {requests}"])


def first_difference(control: dict[str, Rows], chaos: dict[str, Rows]) -> str | None:
    """The first row that differs, in words; None when the two nights are row-for-row equal."""
    for table, expected in control.items():
        got = chaos[table]
        for key in sorted(set(expected) | set(got), key=str):
            shown = ":".join(str(k) for k in key)
            if key not in got:
                return f"{table}: {shown} is in the control night but missing under faults"
            if key not in expected:
                return f"{table}: {shown} is extra under faults ({_brief(got[key])})"
            if expected[key] != got[key]:
                column = next(c for c in expected[key] if expected[key][c] != got[key][c])
                return (f"{table}: {shown} {column} is {got[key][column]!r} under faults, "
                        f"{expected[key][column]!r} in the control night")
    return None


def _brief(row: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in row.items())[:200]


async def repeated_requests(url: str, workflow_id: str, most: int = 5) -> list[tuple[str, list]]:
    """Invoices the model was asked about more than once, with when: set beside the fault times,
    this tells a request resent after a kill from one sent by a stale attempt that woke up."""
    conn = await asyncpg.connect(url, timeout=10)
    try:
        rows = await chaos.repeated_requests(conn, workflow_id, most)
        return [(r["invoice_no"], list(r["at"])) for r in rows]
    finally:
        await conn.close()
