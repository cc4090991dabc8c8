"""Connections, migrations and the few statements about a connection itself (locks, commit
mode). Postgres is the system of record for every business write."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from importlib import resources

import asyncpg

from recon.domain.errors import DatabaseUnavailable
from recon.domain.redaction import mask_text
from recon.store.fences import Fence

MIGRATION_LOCK = 0x7265636F6E  # "recon": one migrator at a time, across processes


async def connect_pool(
    url: str | None, *, min_size: int = 1, max_size: int = 10,
    idle_transaction_seconds: float | None = None,
) -> asyncpg.Pool:
    """`idle_transaction_seconds`: Postgres ends a transaction of this pool that waits longer than
    this for its client (a frozen worker), releasing its locks."""
    if not url:
        raise DatabaseUnavailable(
            "DATABASE_URL is not set and no .recon/env was found: run `recon dev` first"
        )
    try:
        settings = {}
        if idle_transaction_seconds:
            settings["idle_in_transaction_session_timeout"] = str(int(idle_transaction_seconds * 1000))
        pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size, timeout=10,
                                         server_settings=settings)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise DatabaseUnavailable(f"cannot reach Postgres at {redact(url)}: {exc}") from exc
    assert pool is not None
    return pool


def redact(url: str) -> str:
    """Hide a password in a URL (`u:pw@`, `?password=`, `sslpassword=`) before it reaches a log
    or an error line."""
    return mask_text(url)


def _migrations() -> list[tuple[str, str]]:
    folder = resources.files("recon.store") / "migrations"
    files = sorted(p for p in folder.iterdir() if p.name.endswith(".sql"))
    return [(p.name.removesuffix(".sql"), p.read_text()) for p in files]


async def migrate(pool: asyncpg.Pool) -> list[str]:
    """Apply every migration not yet applied, each in its own transaction; safe to run anywhere."""
    applied: list[str] = []
    async with pool.acquire() as conn:
        await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
        try:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
            for version, sql in _migrations():
                if version in done:
                    continue
                async with conn.transaction():
                    await conn.execute(sql)
                    await conn.execute(
                        "INSERT INTO schema_migrations (version) VALUES ($1)", version
                    )
                applied.append(version)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
    return applied


async def lock_run(conn: asyncpg.Connection, workflow_id: str) -> None:
    """One writer per run's working set at a time (racing attempts queue here); call inside the
    transaction that fills the run's rows, the lock ends with it."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", workflow_id)


# How long a step waits for a second connection before it does the work on its own one.
SPARE_WAIT_SECONDS = 0.5


@asynccontextmanager
async def spare_connection(pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection | None]:
    """A second connection for a step that already holds one, or None when the pool has none to
    spare within SPARE_WAIT_SECONDS: the step then does all of its work on the connection it has.
    Never waiting longer is what keeps steps that each hold one connection and want a second from
    starving the pool into a deadlock (many nights on one worker)."""
    try:
        conn = await pool.acquire(timeout=SPARE_WAIT_SECONDS)
    except TimeoutError:
        yield None
        return
    try:
        yield conn
    finally:
        await pool.release(conn)


async def both(first: Coroutine[object, object, object],
               second: Coroutine[object, object, object]) -> None:
    """Run two statements of a step on their two connections at once. When one fails the other is
    cancelled (its statement, and the transaction around it, roll back) and the failure is the
    step's own exception, not a group, so the step's error handling classifies it as usual."""
    try:
        async with asyncio.TaskGroup() as lanes:
            lanes.create_task(first)
            lanes.create_task(second)
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None


MASTER_DATA_LOCK = "recon:master-data"


async def lock_master_data(conn: asyncpg.Connection) -> None:
    """One master data load at a time (suppliers, orders and receipts check each other's rows),
    inside the load's transaction; the lock ends with it."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", MASTER_DATA_LOCK)


async def commit_asynchronously(conn: asyncpg.Connection) -> None:
    """Inside a transaction: its commit does not wait for the disk. A worker crash cannot lose a
    commit; only a Postgres crash can lose the last fraction of a second, so use it only where
    the work lost is redone for free, and call `make_durable` before telling anyone (Temporal)
    that the work is done: work an activity reported done is never done again."""
    await conn.execute("SET LOCAL synchronous_commit = off")


async def make_durable(conn: asyncpg.Connection, fence: Fence) -> None:
    """Wait until every commit made so far, asynchronous ones included, is on disk, and check the
    fence once more. The fence's row lock (FOR SHARE) is a WAL record, so this transaction's
    commit is synchronous and flushes the WAL up to its own record, which lies after every earlier
    commit. (A transaction that writes no WAL commits without waiting, whatever the setting.)
    Without it, a Postgres crash within a fraction of a second of an activity's completion lost
    the invoices it had recorded, and the night went on without them (seen under `recon chaos`:
    a night Completed with 290 of 300 extracted)."""
    async with conn.transaction():
        await conn.execute("SET LOCAL synchronous_commit = on")
        await fence.check(conn)
