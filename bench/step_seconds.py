"""Per night and step, the seconds the worker logged for each activity, from a saved bench log.

    uv run python bench/night.py --history 30 ... > night.log 2>&1
    uv run python bench/step_seconds.py night.log

`bench/night.py` prints its full step table for the measured night only; a history night gets one
line of step walls. The in-process worker logs every activity's `finished` event with its
seconds, so the same log tells how each step of every history night moved as the database grew.
Extraction batches run side by side: for `extract_lines` the longest batch is shown, for every
other step the sum.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def step_seconds(lines: list[str]) -> dict[str, dict[str, float]]:
    nights: dict[str, dict[str, float]] = {}
    for line in lines:
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not str(event.get("event", "")).endswith(" finished") or "seconds" not in event:
            continue
        night = nights.setdefault(event["workflow_id"], defaultdict(float))
        step, seconds = event["step"], float(event["seconds"])
        night[step] = max(night[step], seconds) if step == "extract_lines" else night[step] + seconds
    return nights


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        nights = step_seconds(f.readlines())
    steps: list[str] = []
    for night in nights.values():
        steps += [s for s in night if s not in steps]
    print("night".ljust(26) + " ".join(s[:10].rjust(10) for s in steps))
    for workflow_id, night in nights.items():
        print(workflow_id.ljust(26) + " ".join(f"{night.get(s, 0.0):10.2f}" for s in steps))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: bench/step_seconds.py BENCH_LOG")
    main(sys.argv[1])
