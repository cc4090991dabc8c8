"""`recon chaos --model batch`: both nights extract through the provider's batch interface.

Each night gets its own loopback server speaking OpenAI's Batch API and chat completions (the
repository's fake, tests/fakes/batch_server.py: it counts every batch it is asked to create and
every request it bills). The night under faults must then equal the control row for row, as in
every chaos run, and also: its server made exactly one batch per group the night planned, and
billed no request twice (a batch line answered, or an interactive 200). The faults land in the
batch too: the night's work stands still while it waits, so every fault due by then lands in the
upload, the create or the wait.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recon.domain.errors import ChaosFailed, Refused

MODES = ("offline", "batch")
# Seconds from a batch's create to its last answer: long enough for faults to land in the wait,
# short enough for a lean night (the provider's own window is up to 24 h).
COMPLETION_DELAY = 6.0
POLL_SECONDS = 1.0

_servers: dict[str, Any] = {}  # night -> its running fake


def refuse_unless_available(model: str, nights: int) -> None:
    """One clear line: an unknown mode, a month, or a checkout without the loopback Batch API."""
    if model not in MODES:
        raise Refused(f"--model must be one of {', '.join(MODES)}, got {model!r}")
    if model == "batch" and nights > 1:
        raise Refused("--model batch takes one night (--nights 1)")
    if model == "batch":
        try:
            import tests.fakes.batch_server  # noqa: F401
        except ImportError:
            raise Refused("--model batch runs against the repository's loopback Batch API "
                          "(tests/fakes/batch_server.py): run it from a checkout") from None


def worker_env(night: str) -> dict[str, str]:
    """The night's server, started on first use, as the workers' environment names it."""
    from tests.fakes.batch_server import BatchOpenAI

    if night not in _servers:
        fake = BatchOpenAI(completion_delay=COMPLETION_DELAY).__enter__()
        # The ids the provider hands out, the same sequence in both nights (the summary names the
        # batch): a second batch under faults would be `..._000002` and differ from the control.
        fake._prefix = "chaos"
        _servers[night] = fake
    return _servers[night].env() | {"RECON_MODEL_MODE": "batch",
                                    "RECON_MODEL_BATCH_POLL": str(POLL_SECONDS)}


def run_settings() -> dict[str, Any]:
    """What the night's run input carries in batch mode (the starter reads it from settings)."""
    return {"model_mode": "batch", "model_batch_poll_seconds": POLL_SECONDS}


async def check_batches(url_of: Callable[[str], str], workflow_id: str,
                        say: Callable[[str], None]) -> None:
    """Each night: one batch made per group planned, none billed twice (`url_of(night)`: its
    database)."""
    import asyncpg

    from recon.store.chaos import batch_groups

    for night, fake in _servers.items():
        conn = await asyncpg.connect(url_of(night), timeout=10)
        try:
            groups = await batch_groups(conn, workflow_id)
        finally:
            await conn.close()
        twice = fake.answered_twice()
        say(f"{night} night's model batches: {groups} planned, {fake.creates} created, "
            f"{sum(fake.billed().values())} requests billed ({len(fake.interactive())} "
            f"interactively), {len(twice)} billed twice")
        if groups < 1 or fake.creates != groups:
            raise ChaosFailed(f"the {night} night planned {groups} batch groups and the provider "
                              f"made {fake.creates} batches")
        if twice:
            raise ChaosFailed(f"the {night} night's provider billed {len(twice)} requests twice "
                              f"(first {twice[0]})")


async def kill_while_waiting(night: Any, url: str, workflow_id: str,
                             say: Callable[[str], None]) -> None:
    """Beside the planned faults: once the night's batch is created and not yet read, SIGKILL
    every serving worker (the next look, and the read, fall to workers started after), so a kill
    lands in the wait whatever the planned moments are."""
    import asyncio
    import time

    import asyncpg

    from recon.store.chaos import batch_waiting

    while True:
        try:
            conn = await asyncpg.connect(url, timeout=2)
            try:
                state = await batch_waiting(conn, workflow_id)
            finally:
                await conn.close()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            state = None  # Postgres restarted by a planned fault: look again
        if state == "read":
            say(f"[{time.monotonic() - night.started:6.1f}s] the batch was read before a kill "
                "could land in its wait")
            return
        if state == "waiting" and night.fleet.serving():
            for worker in night.fleet.serving():
                night.fleet.kill(worker)
                say(f"[{time.monotonic() - night.started:6.1f}s] kill {worker.name} (pid "
                    f"{worker.pid}): SIGKILL while the night waits for its batch")
            return
        await asyncio.sleep(0.25)


def close_all() -> None:
    while _servers:
        _servers.popitem()[1].__exit__(None, None, None)
