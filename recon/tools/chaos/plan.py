"""What `recon chaos` plans before it starts: the size of the night, how many faults of each kind,
and the moments (in work done, not seconds) at which they land."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from recon.tools.chaos.stack import WorkerFleet

WAREHOUSE = "chaos"
TASK_QUEUE = "chaos"
POSTGRES_DOWN_SECONDS = 2.0
TEMPORAL_DOWN_SECONDS = 3.0
# Smaller batches than production in both nights: more attempts in flight to crash into, and a
# night long enough for every fault to land inside it (a 2,000-invoice night is ~4 s otherwise).
EXTRACT_BATCH = 10
POST_BATCH = 100
# The night under faults waits before this step until every fault has landed (failpoint `hold`):
# the faults' moments are at most 60 % of the control night's work, all of it done before step 10.
HELD_STEP = "send_summary"


@dataclass(frozen=True)
class ChaosPlan:
    invoices: int = 2000
    mismatches: int = 200
    kills: int = 20
    freezes: int = 3
    restarts: int = 2
    seed: int = 1
    business_date: str = "2026-11-02"
    workers: int = 2
    heartbeat_seconds: float = 3.0
    timeout: float = 900.0
    documents: str = "text"  # the seed's document format (`recon seed --format`)
    nights: int = 1  # >1: a seeded month of consecutive nights (`recon seed --nights`)
    ledger: str | None = None  # None: the built-in; "tryton": each night posts into its own too
    sources: bool = False  # the night's documents and master data come through sources
    mail_outage: bool = False  # with sources: the mail server down for 60 s during the fetch
    warehouses: int = 1  # >1: that many warehouses' nights together (recon/tools/chaos/warehouses.py)
    model: str = "offline"  # "batch": both nights extract through a loopback Batch API


@dataclass
class Fault:
    due: int  # the moment: how much of the night's work (rows + history events) is done
    kind: str
    at: float = 0.0  # seconds into the night when it was done
    work: int = 0  # the night's work done when it was done
    target: str = ""
    progress_after: float | None = None
    finished_after: float | None = None


@dataclass
class Night:
    """One night in flight: the fleet serving it and what happened to it."""

    name: str
    fleet: WorkerFleet
    started: float = 0.0
    wall_started: float = 0.0  # the same moment on the wall clock, to place database timestamps
    finished: float | None = None
    progress: int = 0  # rows written + history events, as far as seen
    outcome: str = ""
    faults: list[Fault] = field(default_factory=list)


def schedule(plan: ChaosPlan, control_work: int) -> list[Fault]:
    """Faults at random (seeded) moments of the night's work: at random points between 2 % and
    60 % of the work the control night did. Moments in work, not seconds, so the faults land
    throughout the night however much the earlier ones slowed it down."""
    rng = random.Random(plan.seed)
    kinds = (["kill"] * plan.kills + ["freeze"] * plan.freezes
             + ["temporal"] * plan.restarts + ["postgres"] * plan.restarts)
    rng.shuffle(kinds)
    moments = sorted(int(rng.uniform(0.02, 0.6) * control_work) for _ in kinds)
    return [Fault(due, kind) for due, kind in zip(moments, kinds, strict=True)]


def schedule_month(plan: ChaosPlan, control_work: list[int]) -> list[list[Fault]]:
    """A month's faults, spread over its nights: the kinds shuffled as for one night, then dealt
    to the nights in turn, each landing at a random point between 2 % and 60 % of the work the
    control did on that night (so every fault lands before that night's held step)."""
    rng = random.Random(f"{plan.seed}:month")
    kinds = (["kill"] * plan.kills + ["freeze"] * plan.freezes
             + ["temporal"] * plan.restarts + ["postgres"] * plan.restarts)
    rng.shuffle(kinds)
    nights: list[list[Fault]] = [[] for _ in control_work]
    for n, kind in enumerate(kinds):
        k = n % len(control_work)
        nights[k].append(Fault(int(rng.uniform(0.02, 0.6) * control_work[k]), kind))
    for faults in nights:
        faults.sort(key=lambda f: f.due)
    return nights
