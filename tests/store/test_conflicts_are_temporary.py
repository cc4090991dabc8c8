"""A deadlock and a serialization failure, made for real on the session's Postgres, raised the way
a step meets them (out of `async with conn.transaction()`), are temporary: the step retries
them with the same keys and never hands the run over for them (recon/domain/errors.py)."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from recon.domain.errors import classify, outage_in_words, transaction_conflict
from tests.conftest import Database


async def _connect(database: Database) -> asyncpg.Connection:
    return await asyncio.wait_for(asyncpg.connect(database.url), 30)


async def test_a_real_deadlock_out_of_a_transaction_block_is_temporary(
    database: Database, pool: asyncpg.Pool,
) -> None:
    """Two transactions take two locks in opposite orders; Postgres kills one of them."""
    first = hash(uuid.uuid4().hex) % 2**30
    second = first + 1
    a, b = await _connect(database), await _connect(database)
    try:
        async def take(conn: asyncpg.Connection, one: int, two: int, mine: asyncio.Event,
                       theirs: asyncio.Event) -> None:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1)", one)
                mine.set()
                await theirs.wait()
                await conn.execute("SELECT pg_advisory_xact_lock($1)", two)

        a_holds, b_holds = asyncio.Event(), asyncio.Event()
        results = await asyncio.wait_for(asyncio.gather(
            take(a, first, second, a_holds, b_holds),
            take(b, second, first, b_holds, a_holds),
            return_exceptions=True), 60)
    finally:
        await a.close()
        await b.close()
    failures = [r for r in results if isinstance(r, BaseException)]
    assert len(failures) == 1, results
    assert isinstance(failures[0], asyncpg.DeadlockDetectedError)
    assert classify(failures[0]) == "temporary"
    assert transaction_conflict(failures[0]) is failures[0]
    assert outage_in_words(failures[0]) == "database conflicts with a racing attempt"
    # As a wrapper would carry it: still temporary.
    try:
        raise RuntimeError("posting batch 3 failed") from failures[0]
    except RuntimeError as wrapped:
        assert classify(wrapped) == "temporary"


async def test_a_real_serialization_failure_is_temporary(
    database: Database, pool: asyncpg.Pool,
) -> None:
    """Under REPEATABLE READ, updating a row another transaction changed since the snapshot
    fails with SQLSTATE 40001."""
    table = f"conflict_{uuid.uuid4().hex[:12]}"
    await pool.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, n int)")
    try:
        await pool.execute(f"INSERT INTO {table} VALUES (1, 0)")
        a, b = await _connect(database), await _connect(database)
        try:
            with pytest.raises(asyncpg.SerializationError) as raised:
                async with a.transaction(isolation="repeatable_read"):
                    await a.fetchval(f"SELECT n FROM {table} WHERE id = 1")  # the snapshot
                    async with b.transaction():
                        await b.execute(f"UPDATE {table} SET n = n + 1 WHERE id = 1")
                    await a.execute(f"UPDATE {table} SET n = n + 1 WHERE id = 1")
        finally:
            await a.close()
            await b.close()
    finally:
        await pool.execute(f"DROP TABLE {table}")
    assert raised.value.sqlstate == "40001"
    assert classify(raised.value) == "temporary"
    assert transaction_conflict(raised.value) is raised.value
