"""Failpoints: make this process fail at an exact spot, for the demo and the crash tests.

`RECON_FAILPOINTS` is a comma-separated list of `step:position[:action]`:
  post_adjustments:24           exit hard when the step reaches entry 24 (before it commits)
  post_adjustments:24:first     exit hard there, but only in the step's first attempt: a second
                                worker given the same failpoints finishes the retry
  sender_accepted:5:kill        SIGKILL this process when the 5th message was accepted by the
                                mail server, before it is marked sent (the at-least-once window)
  move_filed:1:first            exit hard before a mailbox source's first move of filed mail, after
                                the rows that filed it committed (recon/sources/fetch.py)
  post_adjustments:24:stop      freeze this whole process there (SIGSTOP to itself), like a
                                stopped VM or a long GC pause; SIGCONT wakes it (once a process)
  in_transaction:ledger:stop    freeze inside a ledger batch's transaction, after its fence check
  post_adjustments:3:temporary  raise a temporary error there, once per process
  before:post_adjustments       exit hard as the step starts (a crash *between* steps)
  post_adjustments:delay:0.5    wait 0.5 s after each committed batch (to make timing visible)
  before:send_summary:hold      wait as the step starts (heartbeating) until the file named by
                                RECON_FAILPOINT_RELEASE exists: `recon chaos` holds its night
                                there until every planned fault has landed, on any machine speed
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


_parsed: tuple[str, dict[str, str]] = ("", {})


def _points() -> dict[str, str]:
    """The failpoints of the environment, parsed again only when the variable changes: `hit` runs
    once per invoice of a 100k night, and parsing per call was ~15 % of the extraction's samples."""
    global _parsed
    raw = os.environ.get("RECON_FAILPOINTS", "")
    if raw == _parsed[0]:
        return _parsed[1]
    points: dict[str, str] = {}
    for part in raw.split(","):
        bits = part.strip().split(":")
        if len(bits) >= 2 and bits[0]:
            points[f"{bits[0]}:{bits[1]}"] = bits[2] if len(bits) > 2 else "exit"
    _parsed = (raw, points)
    return points


def _exit(where: str) -> None:
    _log().error("failpoint %s reached: exiting hard (a crash)", where, extra={"failpoint": where})
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
    os._exit(137)


def _first_attempt() -> bool:
    from temporalio import activity

    return not activity.in_activity() or activity.info().attempt == 1


def _signal_self(where: str, what: str, sig: signal.Signals) -> None:
    """Say it (and flush it: the process may never run again), then send ourselves `sig`."""
    _log().error("failpoint %s reached: %s", where, what, extra={"failpoint": where})
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), sig)


def hit(step: str, position: int | str) -> None:
    where = f"{step}:{position}"
    action = _points().get(where)
    if action is None:
        return
    if action == "exit" or (action == "first" and _first_attempt()):
        _exit(where)
    elif action == "kill":
        _signal_self(where, "SIGKILL", signal.SIGKILL)
    elif action == "stop" and where not in _fired:
        _fired.add(where)
        _signal_self(where, "freezing", signal.SIGSTOP)
    elif action == "temporary" and where not in _fired:
        _fired.add(where)
        raise ConnectionResetError(f"failpoint {where}: a temporary error")


def hit_each(step: str, positions: list[int]) -> None:
    """`hit` for each position of a group about to be worked on and committed together: one
    dictionary check for the whole group when no failpoint is set (the hot path of a 100k night),
    and the same spots, before the same commit, when one is."""
    if _points():
        for position in positions:
            hit(step, position)


def hit_range(step: str, after: int, last: int) -> None:
    """`hit` for every position in (after, last], for steps that write a range in one statement:
    the env is read once, and a failpoint inside the range fires before the range commits."""
    for point in _points():
        name, _, position = point.partition(":")
        if name == step and position.isdigit() and after < int(position) <= last:
            hit(step, int(position))


def before_step(step: str) -> None:
    hit("before", step)


async def hold_before(step: str) -> None:
    """`before:<step>:hold`: wait until the release file exists. The caller's heartbeat ticker runs
    meanwhile, so a held attempt is alive to Temporal; a killed one is retried and holds again."""
    if _points().get(f"before:{step}") != "hold":
        return
    release = os.environ.get("RECON_FAILPOINT_RELEASE", "")
    if not release:
        return
    if not os.path.exists(release):
        _log().warning("failpoint before:%s: holding until %s exists", step, release,
                       extra={"failpoint": f"before:{step}"})
    while not os.path.exists(release):
        await asyncio.sleep(0.1)


async def after_batch(step: str) -> None:
    delay = _points().get(f"{step}:delay")
    if delay:
        await asyncio.sleep(float(delay))
