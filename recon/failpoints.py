"""Failpoints: `RECON_FAILPOINTS=post_adjustments:24` makes this process exit hard when the step
reaches entry 24 (before that entry commits). Used by the demo and the crash tests to kill a real
worker at an exact spot; unset in production."""

from __future__ import annotations

import os
import sys


def _parse(spec: str) -> dict[str, int]:
    points: dict[str, int] = {}
    for part in spec.split(","):
        name, _, at = part.strip().partition(":")
        if name and at.isdigit():
            points[name] = int(at)
    return points


def hit(name: str, position: int) -> None:
    """Exit at once, like a power cut: no cleanup, no flushing of pending heartbeats."""
    at = _parse(os.environ.get("RECON_FAILPOINTS", "")).get(name)
    if at is not None and position == at:
        sys.stderr.write(f"failpoint {name}:{at} reached: exiting hard\n")
        sys.stderr.flush()
        os._exit(137)
