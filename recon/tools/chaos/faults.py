"""The faults `recon chaos` injects, one after another at their planned moments.

A kill is SIGKILL of a random awake worker (the fleet starts a replacement, so the run can always
finish). A freeze is SIGSTOP of a random worker for longer than the heartbeat timeout, so Temporal
hands its work to another attempt before the frozen one wakes up (SIGCONT) and carries on as if
nothing happened. A server restart stops the server, leaves it down for a few seconds and starts
it again on the same data and port: Postgres abruptly (crash recovery on restart), Temporal
with SIGKILL (its history lives in a file). A mail-server outage (`recon chaos --sources
--mail-outage`) stops Dovecot for MAIL_DOWN_SECONDS while the other faults go on landing.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from pathlib import Path

from recon.tools.chaos.plan import POSTGRES_DOWN_SECONDS, TEMPORAL_DOWN_SECONDS, ChaosPlan, Night
from recon.tools.chaos.stack import ScratchStack

MAIL_DOWN_SECONDS = 60.0

MIN_GAP_SECONDS = 0.5


async def apply_faults(night: Night, stack: ScratchStack, plan: ChaosPlan,
                       say: Callable[[str], None], release: Path | None = None) -> None:
    """Every fault in turn, then `release` (the file the held night waits for), whatever happens."""
    try:
        await _apply(night, stack, plan, say)
    finally:
        if release is not None:
            release.touch()


async def _apply(night: Night, stack: ScratchStack, plan: ChaosPlan, say: Callable[[str], None]) -> None:
    outages: list[asyncio.Future] = []
    try:
        await _each(night, stack, plan, say, outages)
        await asyncio.gather(*outages)  # the held step waits for the mail server too
    finally:
        for outage in outages:
            outage.cancel()
        await asyncio.gather(*outages, return_exceptions=True)


async def _mail_back(night: Night, stack: ScratchStack, say: Callable[[str], None]) -> None:
    """The mail server back on the same port and mailboxes after its outage, whatever happens."""
    assert stack.mail is not None
    try:
        await asyncio.sleep(MAIL_DOWN_SECONDS)
    finally:
        await asyncio.to_thread(stack.mail.start)
        say(f"[{time.monotonic() - night.started:6.1f}s] start the mail server again on the same "
            "mailboxes")


async def _each(night: Night, stack: ScratchStack, plan: ChaosPlan, say: Callable[[str], None],
                outages: list[asyncio.Future]) -> None:
    rng = random.Random(f"{plan.seed}:targets")
    last = -MIN_GAP_SECONDS
    for fault in night.faults:
        # One fault at a time, a moment apart, each when the night's work reaches its point.
        while (night.progress < fault.due
               or time.monotonic() - night.started < last + MIN_GAP_SECONDS):
            await asyncio.sleep(0.05)
        fault.at = time.monotonic() - night.started
        fault.work = night.progress
        stamp = f"[{fault.at:6.1f}s]"
        if fault.kind in ("kill", "freeze"):
            # A target that is serving: one still importing would be no test at all.
            awake = night.fleet.serving()
            for _ in range(120):
                if awake:
                    break
                await asyncio.sleep(0.25)
                awake = night.fleet.serving()
            if not awake:
                continue
            worker = rng.choice(awake)
            fault.at = time.monotonic() - night.started
            stamp = f"[{fault.at:6.1f}s]"
            fault.target = f"{worker.name} (pid {worker.pid})"
            if fault.kind == "kill":
                night.fleet.kill(worker)
                say(f"{stamp} kill {fault.target}: SIGKILL")
            else:
                seconds = 2 * plan.heartbeat_seconds + 2
                night.fleet.freeze(worker, seconds)
                say(f"{stamp} freeze {fault.target}: SIGSTOP for {seconds:.0f} s "
                    f"(heartbeat timeout {plan.heartbeat_seconds:.0f} s)")
        elif fault.kind == "mail":
            assert stack.mail is not None
            fault.target = f"mail server (IMAP port {stack.mail.port})"
            stack.mail.stop()
            say(f"{stamp} stop the {fault.target}: down for {MAIL_DOWN_SECONDS:.0f} s")
            outages.append(asyncio.ensure_future(_mail_back(night, stack, say)))
        elif fault.kind == "temporal":
            fault.target = f"Temporal dev server (port {stack.temporal.port})"
            stack.kill_temporal()
            say(f"{stamp} kill {fault.target}: SIGKILL, down for {TEMPORAL_DOWN_SECONDS:.0f} s")
            began = time.monotonic() + TEMPORAL_DOWN_SECONDS
            try:
                await asyncio.sleep(TEMPORAL_DOWN_SECONDS)
            finally:  # even if the run ends meanwhile: the comparison needs the servers back
                stack.start_temporal()
            say(f"[{time.monotonic() - night.started:6.1f}s] start Temporal dev server again on "
                f"the same data ({time.monotonic() - began:.1f} s)")
        else:
            fault.target = "Postgres"
            stack.stop_postgres()
            say(f"{stamp} stop {fault.target} (immediate): down for {POSTGRES_DOWN_SECONDS:.0f} s")
            began = time.monotonic() + POSTGRES_DOWN_SECONDS
            try:
                await asyncio.sleep(POSTGRES_DOWN_SECONDS)
            finally:
                stack.start_postgres()
            say(f"[{time.monotonic() - night.started:6.1f}s] start Postgres again on the same data "
                f"({time.monotonic() - began:.1f} s)")
        last = time.monotonic() - night.started
