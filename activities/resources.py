"""What the activities of one worker share: the Postgres pool, the extractor, the settings and
the Temporal client, handed to each activity class when the worker builds it (activities as
methods that carry their state). Nothing is global: a test builds the classes it needs with
the resources it has. Workflows never touch these.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
from temporalio.client import Client

from activities import fences
from recon.documents.extraction.answer import Extractor
from recon.ledger import outside_ledger
from recon.ledger.port import OutsideLedger
from recon.runtime.config import Settings
from recon.store.fences import Fence


@dataclass(frozen=True)
class Resources:
    pool: asyncpg.Pool
    extractor: Extractor
    settings: Settings
    # The worker's Temporal client: an attempt asks it whether it is still the live one.
    # None only for activities run outside a worker (tests of one activity).
    client: Client | None = None


class Room:
    """Base of the activity classes (one per room: reading, extraction, posting, messages,
    handovers, undo, schedule). Their `@activity.defn` methods are what the worker registers."""

    def __init__(self, resources: Resources) -> None:
        self.pool = resources.pool
        self.extractor = resources.extractor
        self.settings = resources.settings
        self.client = resources.client
        self._outside: list[OutsideLedger | None] = []

    @property
    def outside(self) -> OutsideLedger | None:
        """The outside ledger RECON_LEDGER names (None: the built-in one only), made once."""
        if not self._outside:
            self._outside.append(outside_ledger(self.settings))
        return self._outside[0]

    @property
    def outage_window_seconds(self) -> float:
        """How long temporary errors are retried before the step hands over (activities/step.py)."""
        return self.settings.outage_window_seconds

    async def take_fence(self, scope: str) -> Fence:
        """The fence for this attempt: live at Temporal, and newest in Postgres."""
        return await fences.take(self.client, self.pool, scope)
