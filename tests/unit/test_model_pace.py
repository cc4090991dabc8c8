"""RECON_MODEL_RPM / RECON_MODEL_TPM pace requests evenly, per process (no servers needed)."""

from __future__ import annotations

import asyncio
import time

import pytest

from recon.documents.extraction.pace import Pace, pace_for
from recon.runtime.config import load_settings


async def _arrivals(pace: Pace, n: int, tokens: int) -> list[float]:
    """When each of n requests was let go, in seconds from the moment they all asked."""
    times: list[float] = []
    asked = time.monotonic()

    async def one() -> None:
        await pace.wait(tokens)
        times.append(time.monotonic())

    await asyncio.gather(*(one() for _ in range(n)))
    return sorted(t - asked for t in times)


async def test_requests_per_minute_are_spaced_evenly() -> None:
    times = await _arrivals(Pace(rpm=1200, tpm=0), 11, 100)  # one every 50 ms
    # The promise is a schedule: the i-th request never goes before i × 50 ms. (Gaps between
    # neighbours are no measure: a request woken late on a busy machine shortens the next gap.)
    early = [(i, round(t, 4)) for i, t in enumerate(times) if t < i * 0.05 - 0.002]
    assert not early, f"requests let go before their slot: {early}"
    assert times[-1] >= 0.49


async def test_tokens_per_minute_hold_requests_back() -> None:
    pace = Pace(rpm=0, tpm=600_000)  # 10,000 tokens a second: 1,000 tokens take 0.1 s
    times = await _arrivals(pace, 6, 1000)
    assert times[-1] >= 0.49  # the sixth waits for five earlier 1,000-token budgets
    pace.used(1000, 3000)  # the answer said it cost more: the next request waits longer
    started = time.monotonic()
    await pace.wait(1000)
    assert time.monotonic() - started >= 0.25


async def test_no_limit_means_no_wait_and_one_pace_per_process(monkeypatch) -> None:
    times = await _arrivals(Pace(0, 0), 50, 10_000)
    assert times[-1] < 0.5, "no limit: nothing sleeps (a limit of 1,200/min would take 2.5 s)"
    assert pace_for(60, 0) is pace_for(60, 0)
    monkeypatch.setenv("RECON_MODEL_RPM", "-1")
    with pytest.raises(ValueError, match="RECON_MODEL_RPM must be at least 0"):
        load_settings()
