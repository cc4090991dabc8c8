"""A run's event history as bench/night.py reads it: per step (activity type) the wall seconds
from its first ActivityTaskScheduled to its last ActivityTaskCompleted, how many activities and
their busiest retry; the history's events and bytes, and its largest payload anywhere (Temporal
warns and fails at the sizes below)."""

from __future__ import annotations

from dataclasses import dataclass, field

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

HISTORY_WARN, HISTORY_LIMIT = 10_240, 51_200
PAYLOAD_WARN = 256 * 1024


@dataclass
class StepTiming:
    name: str
    activities: int = 0
    first_scheduled: float | None = None
    last_completed: float | None = None
    busy: float = 0.0  # sum over its activities of scheduled -> completed
    attempts_max: int = 0

    @property
    def wall(self) -> float:
        if self.first_scheduled is None or self.last_completed is None:
            return float("nan")
        return self.last_completed - self.first_scheduled


@dataclass
class HistoryReport:
    events: int = 0
    history_bytes: int = 0
    largest_payload: int = 0
    largest_where: str = ""
    steps: dict[str, StepTiming] = field(default_factory=dict)
    first_event: float = 0.0
    last_event: float = 0.0


def _payload_sizes(message, path: str = ""):
    """Every Payload anywhere inside a protobuf message: (size in bytes, field path)."""
    for desc, value in message.ListFields():
        if desc.message_type is None:
            continue
        repeated = desc.is_repeated if hasattr(desc, "is_repeated") else desc.label == desc.LABEL_REPEATED
        items = value.values() if desc.message_type.GetOptions().map_entry else (
            value if repeated else [value])
        for item in items:
            where = f"{path}.{desc.name}" if path else desc.name
            if isinstance(item, Payload):
                yield item.ByteSize(), where
            elif hasattr(item, "ListFields"):
                yield from _payload_sizes(item, where)


async def read_history(handle: WorkflowHandle) -> HistoryReport:
    report = HistoryReport()
    history = await handle.fetch_history()
    scheduled: dict[int, tuple[str, float]] = {}
    for event in history.events:
        report.events += 1
        report.history_bytes += event.ByteSize()
        at = event.event_time.ToDatetime().timestamp()
        if report.events == 1:
            report.first_event = at
        report.last_event = at
        for size, where in _payload_sizes(event):
            if size > report.largest_payload:
                activity = ""
                if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                    activity = f" ({event.activity_task_scheduled_event_attributes.activity_type.name})"
                elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                    sid = event.activity_task_completed_event_attributes.scheduled_event_id
                    activity = f" ({scheduled.get(sid, ('?', 0))[0]})"
                report.largest_payload = size
                report.largest_where = f"event {event.event_id} {where}{activity}"
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = (name, at)
            step = report.steps.setdefault(name, StepTiming(name))
            step.activities += 1
            if step.first_scheduled is None:
                step.first_scheduled = at
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            step = report.steps[scheduled[attrs.scheduled_event_id][0]]
            step.attempts_max = max(step.attempts_max, attrs.attempt)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            name, when = scheduled[attrs.scheduled_event_id]
            step = report.steps[name]
            step.last_completed = at
            step.busy += at - when
    return report

