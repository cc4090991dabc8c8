"""Reading a run's Temporal event history: where are we, how often was each step attempted.

This is the only place that interprets history for people (demo, inspect); the workflow itself
never reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle


@dataclass
class StepAttempts:
    name: str
    activities: int = 0
    max_attempt: int = 0
    retries: int = 0
    completed: int = 0
    failed: int = 0


@dataclass
class HistoryFacts:
    events: int = 0
    steps: dict[str, StepAttempts] = field(default_factory=dict)
    completed_results: dict[str, list] = field(default_factory=dict)

    @property
    def activity_retries(self) -> int:
        return sum(s.retries for s in self.steps.values())


async def read_history(handle: WorkflowHandle) -> HistoryFacts:
    facts = HistoryFacts()
    scheduled: dict[int, str] = {}
    history = await handle.fetch_history()
    for event in history.events:
        facts.events += 1
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = name
            facts.steps.setdefault(name, StepAttempts(name)).activities += 1
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            step = facts.steps[scheduled[attrs.scheduled_event_id]]
            step.max_attempt = max(step.max_attempt, attrs.attempt)
            step.retries += attrs.attempt - 1
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            name = scheduled[attrs.scheduled_event_id]
            facts.steps[name].completed += 1
            facts.completed_results.setdefault(name, []).append(attrs.result)
        elif event.event_type in (
            EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
            EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
        ):
            attrs = (event.activity_task_failed_event_attributes
                     if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
                     else event.activity_task_timed_out_event_attributes)
            facts.steps[scheduled[attrs.scheduled_event_id]].failed += 1
    return facts
