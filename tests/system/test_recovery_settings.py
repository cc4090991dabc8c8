"""What makes a lost worker's run go on within seconds on a stock Temporal server reaches the
worker and the steps (docs/operations.md, "Recovery"): the worker that `recon worker` builds has
the short sticky-queue timeout, the heartbeat throttle and the graceful shutdown, and the night
schedules its steps with the run's heartbeat timeout (at least 2 s for step 2, which computes)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

import worker
from recon.domain.settings_table import default_of
from tests.helpers import inprocess_worker, settings_for
from workflows.policies import MODEL_TIMEOUT, READ_TIMEOUT, WRITE_TIMEOUT, step_heartbeat


async def test_the_worker_runs_with_the_recovery_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[worker.Worker] = []

    class Recorded(worker.Worker):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setattr(worker, "Worker", Recorded)
    async with inprocess_worker(settings_for(f"recovery-settings-{uuid.uuid4().hex[:8]}")):
        config = built[0].config()
    assert config["sticky_queue_schedule_to_start_timeout"] == timedelta(milliseconds=200)
    assert config["max_heartbeat_throttle_interval"] == timedelta(milliseconds=500)
    assert config["graceful_shutdown_timeout"] == timedelta(seconds=5)


def test_steps_take_the_runs_heartbeat_and_step_2_at_least_two_seconds() -> None:
    assert default_of("RECON_HEARTBEAT_SECONDS") == 1.0
    assert step_heartbeat(1.0, WRITE_TIMEOUT) == step_heartbeat(1.0, READ_TIMEOUT) == timedelta(seconds=1)
    assert step_heartbeat(1.0, MODEL_TIMEOUT) == timedelta(seconds=2)
    assert step_heartbeat(5.0, MODEL_TIMEOUT) == timedelta(seconds=5)
