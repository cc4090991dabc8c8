"""Failpoints: make this process fail at an exact spot, for the demo and the crash tests.

`RECON_FAILPOINTS` is a comma-separated list of `step:position[:action]`:
  post_adjustments:24           exit hard when the step reaches entry 24 (before it commits)
  post_adjustments:24:stop      freeze this whole process there (SIGSTOP to itself), like a
                                stopped VM or a long GC pause; SIGCONT wakes it
  post_adjustments:3:temporary  raise a temporary error there, once per process
  before:post_adjustments       exit hard as the step starts (a crash *between* steps)
  post_adjustments:delay:0.5    wait 0.5 s after each committed batch (to make timing visible)
Unset in production: with no variable, every call here is a dictionary lookup that misses.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

_fired: set[str] = set()
_plain_log = logging.getLogger("recon.failpoints")


def _log() -> logging.Logger | logging.LoggerAdapter:
    """Inside an activity, the SDK's logger: the line then names the run, step and attempt."""
    from temporalio import activity

    return activity.logger if activity.in_activity() else _plain_log


def _points() -> dict[str, str]:
    points: dict[str, str] = {}
    for part in os.environ.get("RECON_FAILPOINTS", "").split(","):
        bits = part.strip().split(":")
        if len(bits) >= 2 and bits[0]:
            points[f"{bits[0]}:{bits[1]}"] = bits[2] if len(bits) > 2 else "exit"
    return points


def _exit(where: str) -> None:
    _log().error("failpoint %s reached: exiting hard (a crash)", where, extra={"failpoint": where})
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
    os._exit(137)


def hit(step: str, position: int | str) -> None:
    where = f"{step}:{position}"
    action = _points().get(where)
    if action is None:
        return
    if action == "exit":
        _exit(where)
    elif action == "stop":
        _log().error("failpoint %s reached: freezing", where, extra={"failpoint": where})
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSTOP)
    elif action == "temporary" and where not in _fired:
        _fired.add(where)
        raise ConnectionResetError(f"failpoint {where}: a temporary error")


def before_step(step: str) -> None:
    hit("before", step)


async def after_batch(step: str) -> None:
    delay = _points().get(f"{step}:delay")
    if delay:
        await asyncio.sleep(float(delay))
