"""RECON_MODEL_RPM / RECON_MODEL_TPM pace requests evenly, per process (no servers needed)."""

from __future__ import annotations

import asyncio
import time

import pytest

from recon.documents.extraction.pace import Pace, pace_for
from recon.runtime.config import load_settings


async def _arrivals(pace: Pace, n: int, tokens: int) -> list[float]:
    times: list[float] = []

    async def one() -> None:
        await pace.wait(tokens)
        times.append(time.monotonic())

    await asyncio.gather(*(one() for _ in range(n)))
    return sorted(times)


async def test_requests_per_minute_are_spaced_evenly() -> None:
    times = await _arrivals(Pace(rpm=1200, tpm=0), 11, 100)  # one every 50 ms
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.045
    assert times[-1] - times[0] >= 0.49


async def test_tokens_per_minute_hold_requests_back() -> None:
    pace = Pace(rpm=0, tpm=600_000)  # 10,000 tokens a second: 1,000 tokens take 0.1 s
    times = await _arrivals(pace, 6, 1000)
    assert times[-1] - times[0] >= 0.49
    pace.used(1000, 3000)  # the answer said it cost more: the next request waits longer
    started = time.monotonic()
    await pace.wait(1000)
    assert time.monotonic() - started >= 0.25


async def test_no_limit_means_no_wait_and_one_pace_per_process(monkeypatch) -> None:
    started = time.monotonic()
    await _arrivals(Pace(0, 0), 50, 10_000)
    assert time.monotonic() - started < 0.05
    assert pace_for(60, 0) is pace_for(60, 0)
    monkeypatch.setenv("RECON_MODEL_RPM", "-1")
    with pytest.raises(ValueError, match="RECON_MODEL_RPM must be at least 0"):
        load_settings()
