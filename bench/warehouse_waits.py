"""Where a night's wall time went, read off its event history (bench/warehouses.py): seconds its
activities waited to be picked up (scheduled -> started: no free slot or poller), ran (started ->
completed), and its workflow tasks waited and ran. A night that waits behind another shows it in
the waits, not in the runs."""

from __future__ import annotations

from dataclasses import dataclass

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

E = EventType


@dataclass
class Waits:
    activity_wait: float = 0.0
    activity_run: float = 0.0
    task_wait: float = 0.0
    task_run: float = 0.0
    activities: int = 0
    tasks: int = 0
    events: int = 0

    def line(self) -> str:
        return (f"activities {self.activities}: waited {self.activity_wait:.2f} s, ran "
                f"{self.activity_run:.2f} s; workflow tasks {self.tasks}: waited "
                f"{self.task_wait:.2f} s, ran {self.task_run:.2f} s; history events {self.events}")


async def waits(handle: WorkflowHandle) -> Waits:
    w = Waits()
    at: dict[int, float] = {}
    history = await handle.fetch_history()
    for event in history.events:
        w.events += 1
        t = event.event_time.ToDatetime().timestamp()
        at[event.event_id] = t
        kind = event.event_type
        if kind == E.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            w.activity_wait += t - at[event.activity_task_started_event_attributes.scheduled_event_id]
        elif kind == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            w.activities += 1
            w.activity_run += t - at[event.activity_task_completed_event_attributes.started_event_id]
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            w.tasks += 1
            w.task_wait += t - at[event.workflow_task_started_event_attributes.scheduled_event_id]
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            w.task_run += t - at[event.workflow_task_completed_event_attributes.started_event_id]
    return w
