"""What every command group of the CLI shares: the consoles, the one-line error, the checks of
dates, warehouses and run ids, and the lifetimes of the Postgres pool and the Temporal client
(one helper instead of an open/close dance in every command)."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import date
from typing import Any

import asyncpg
import typer
from rich.console import Console
from temporalio.client import Client

from recon.domain.errors import Refusal, Refused, transaction_conflict
from recon.domain.keys import WAREHOUSE_CODE
from recon.domain.printable import printable
from recon.runtime.config import load_settings
from recon.store.db import connect_pool, migrate

# Piped output (scripts, CI) gets a wide console so ids are never wrapped mid-word.
console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)

MAX_PORT = 65_535
MAX_SEED_INVOICES = 1_000_000  # the largest night the product is measured at, with room to spare
MAX_SEED_VALUE = 2**63 - 1

# Every refusal of the product is a `Refusal` (recon/domain/errors.py). Input a parser refuses (settings,
# amounts, time zones, pydantic models, modules that still raise the builtins) arrives as a plain
# ValueError or LookupError and is one line too.
USER_FACING = (Refusal, ValueError, LookupError)


def one_line(message: str) -> str:
    """Control characters shown escaped (a newline as `\\n`), so a name with a line break in it
    cannot cut the error line short or forge a second one (recon/domain/printable.py)."""
    return printable(message)


def fail(message: str, code: int = 1) -> None:
    err.print(f"error: {one_line(message)}", markup=False, highlight=False)
    raise typer.Exit(code)


# sysexits' EX_TEMPFAIL: the command may succeed if it is run again (a script can tell it apart).
TEMPFAIL = 75


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # the command's own exit, already said
        except Exception as exc:
            # Asked first: a conflict may come wrapped in a ValueError, which would read as a
            # refusal of the input. It is a race with a worker, and running again is the remedy.
            conflict = transaction_conflict(exc)
            if conflict is not None:
                fail(f"a write raced another writer of the same rows and Postgres rolled it back "
                     f"({type(conflict).__name__}); run the command again", TEMPFAIL)
            if isinstance(exc, USER_FACING):
                fail(str(exc) or type(exc).__name__)
            raise

    return wrapper


def business_date(value: str) -> str:
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise Refused(f"--date must be YYYY-MM-DD, got {value!r}") from None


def warehouse_code(value: str) -> str:
    if not re.fullmatch(WAREHOUSE_CODE, value):
        raise Refused(f"--warehouse must be a short code of a-z, 0-9, '-' or '_', got {value!r}")
    return value


def checked_run_id(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,200}", value):
        raise Refused(f"not a run id: {value!r} (runs look like recon-2026-10-13-ldh)")
    return value


@asynccontextmanager
async def database(*, migrated: bool = True, max_size: int = 10) -> AsyncIterator[asyncpg.Pool]:
    """The pool of one command, migrated first (a command may be the first thing run against a
    new database), and closed when the command is done with it, also when it fails."""
    pool = await connect_pool(load_settings().database_url, max_size=max_size)
    try:
        if migrated:
            await migrate(pool)
        yield pool
    finally:
        await pool.close()


async def temporal() -> Client:
    """The Temporal client of one command (TemporalUnavailable, one line, when it is not up)."""
    from recon.runtime.temporal_client import connect

    return await connect(load_settings())
