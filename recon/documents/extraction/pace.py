"""Per-process pacing of model requests: `RECON_MODEL_RPM` requests and `RECON_MODEL_TPM` tokens
per minute, so a night stays under the provider's quota instead of collecting 429s.

Requests are spaced evenly (60/RPM seconds apart, plus 1 % so that network jitter cannot bunch
them above the limit at the provider's end; each request's estimated tokens take tokens × 60/TPM
seconds of the token budget) rather than let through in a burst at the top of each
minute: providers enforce their limits over shorter windows than a minute too. A reservation is
made without awaiting in between, so concurrent callers in one event loop never share a slot.
"""

from __future__ import annotations

import asyncio
import time

MARGIN = 1.01


class Pace:
    def __init__(self, rpm: int, tpm: int) -> None:
        self.rpm, self.tpm = rpm, tpm
        self._next_request = 0.0
        self._next_tokens = 0.0

    def _reserve(self, tokens: int) -> float:
        now = time.monotonic()
        at = max(now, self._next_request, self._next_tokens)
        if self.rpm:
            self._next_request = at + MARGIN * 60.0 / self.rpm
        if self.tpm:
            self._next_tokens = at + MARGIN * tokens * 60.0 / self.tpm
        return at - now

    async def wait(self, tokens: int) -> None:
        """Wait for this request's turn (returns at once when no limit is set)."""
        if not (self.rpm or self.tpm):
            return
        delay = self._reserve(tokens)
        if delay > 0:
            await asyncio.sleep(delay)

    def used(self, estimated: int, actual: int | None) -> None:
        """Correct the token budget with the usage the answer reported."""
        if self.tpm and actual is not None:
            self._next_tokens += (actual - estimated) * 60.0 / self.tpm


_paces: dict[tuple[int, int], Pace] = {}


def pace_for(rpm: int, tpm: int) -> Pace:
    """One pace per process (per limit pair): every extraction activity in the worker shares it."""
    return _paces.setdefault((rpm, tpm), Pace(rpm, tpm))
