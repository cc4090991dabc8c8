"""One Temporal Schedule per warehouse that starts each night's run: create, look, pause, trigger,
backfill, delete. The CLI (`recon schedule ...`) is a thin layer over these functions.

The schedule runs NightlyStarter (workflows/schedules.py), which starts the night under its
business id `recon-{date}-{warehouse}` and waits for it, so the schedule's overlap policy (SKIP)
keeps one warehouse to one run at a time. A firing missed while the server was down is made up
when it comes back, if it is younger than the catch-up window; older ones are left to a backfill.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleBackfill,
    ScheduleCalendarSpec,
    ScheduleDescription,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleRange,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.service import RPCError, RPCStatusCode

from recon.domain.errors import ScheduleProblem
from recon.domain.keys import workflow_id_for
from recon.domain.schedules import NightlyStart, clock, firing_for, zone
from recon.runtime.config import Settings
from starter import run_request
from workflows.schedules import NightlyStarter

DEFAULT_CATCHUP = timedelta(hours=6)


def schedule_id(warehouse: str) -> str:
    return f"recon-nightly-{warehouse}"


@dataclass(frozen=True)
class ScheduleView:
    """What `list` and `describe` show."""

    schedule_id: str
    warehouse: str
    at: str
    time_zone: str
    lag_days: int
    paused: bool
    note: str
    next_runs: list[datetime]
    recent: list[str]
    catchup_window: timedelta | None
    skipped_overlap: int


def _calendar(at: time) -> ScheduleCalendarSpec:
    return ScheduleCalendarSpec(
        hour=[ScheduleRange(at.hour)], minute=[ScheduleRange(at.minute)],
        second=[ScheduleRange(0)],
    )


async def create(
    client: Client, settings: Settings, warehouse: str, at: str, time_zone: str, *,
    lag_days: int = 1, catchup: timedelta = DEFAULT_CATCHUP, paused: bool = False,
) -> str:
    when, _ = clock(at), zone(time_zone)
    if lag_days < 0:
        raise ScheduleProblem("--lag-days must be 0 or more")
    request = NightlyStart(
        warehouse=warehouse, time_zone=time_zone, lag_days=lag_days,
        run=run_request(settings, "0000-00-00", warehouse),
    )
    sid = schedule_id(warehouse)
    try:
        await client.create_schedule(sid, Schedule(
            action=ScheduleActionStartWorkflow(
                NightlyStarter.run, request, id=sid, task_queue=settings.task_queue,
                static_summary=f"Starts the {warehouse} night at {at} {time_zone}",
            ),
            spec=ScheduleSpec(calendars=[_calendar(when)], time_zone_name=time_zone),
            policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=catchup),
            state=ScheduleState(
                paused=paused,
                note=f"recon nightly for {warehouse} at {at} {time_zone} (lag {lag_days} day)",
            ),
        ))
    except ScheduleAlreadyRunningError:
        raise ScheduleProblem(f"schedule {sid} exists already: `recon schedule delete "
                              f"--warehouse {warehouse}` first to change it") from None
    return sid


async def _describe(client: Client, sid: str) -> ScheduleDescription:
    try:
        return await client.get_schedule_handle(sid).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise ScheduleProblem(f"no schedule {sid!r}: `recon schedule create` first") from None
        raise


async def _start_request(client: Client, description: ScheduleDescription) -> NightlyStart:
    action = description.schedule.action
    assert isinstance(action, ScheduleActionStartWorkflow)
    args = await client.data_converter.decode(action.args, [NightlyStart])
    return args[0]


async def describe(client: Client, warehouse: str) -> ScheduleView:
    sid = schedule_id(warehouse)
    d = await _describe(client, sid)
    req = await _start_request(client, d)
    cal = d.schedule.spec.calendars[0] if d.schedule.spec.calendars else None
    at = f"{cal.hour[0].start:02d}:{cal.minute[0].start:02d}" if cal else "?"
    return ScheduleView(
        schedule_id=sid, warehouse=warehouse, at=at, time_zone=req.time_zone,
        lag_days=req.lag_days, paused=d.schedule.state.paused, note=d.schedule.state.note or "",
        next_runs=list(d.info.next_action_times[:3]),
        recent=[a.action.workflow_id for a in d.info.recent_actions[-5:]
                if hasattr(a.action, "workflow_id")],
        catchup_window=d.schedule.policy.catchup_window,
        skipped_overlap=d.info.num_actions_skipped_overlap,
    )


async def list_all(client: Client) -> list[ScheduleView]:
    views = []
    async for entry in await client.list_schedules():
        if entry.id.startswith("recon-nightly-"):
            views.append(await describe(client, entry.id.removeprefix("recon-nightly-")))
    return sorted(views, key=lambda v: v.warehouse)


async def pause(client: Client, warehouse: str, note: str) -> None:
    await _describe(client, schedule_id(warehouse))
    await client.get_schedule_handle(schedule_id(warehouse)).pause(note=note)


async def unpause(client: Client, warehouse: str, note: str) -> None:
    await _describe(client, schedule_id(warehouse))
    await client.get_schedule_handle(schedule_id(warehouse)).unpause(note=note)


async def trigger(client: Client, warehouse: str) -> None:
    """Fire now, under the schedule's own overlap policy: nothing starts while a night runs."""
    await _describe(client, schedule_id(warehouse))
    await client.get_schedule_handle(schedule_id(warehouse)).trigger()


async def delete(client: Client, warehouse: str) -> None:
    """Delete the schedule. Runs it started are not touched."""
    await _describe(client, schedule_id(warehouse))
    await client.get_schedule_handle(schedule_id(warehouse)).delete()


async def backfill(client: Client, warehouse: str, first: date, last: date) -> list[str]:
    """Fire once for each business date in [first, last], one after another (BUFFER_ALL: each
    starter waits for its night, so the nights run in order, never two at once). A night that
    exists is refused by its starter; nothing runs twice. Returns the ids of the nights asked for."""
    if last < first:
        raise ScheduleProblem("--to is before --from")
    if (last - first).days > 366:
        raise ScheduleProblem("backfill at most a year at a time")
    sid = schedule_id(warehouse)
    d = await _describe(client, sid)
    req = await _start_request(client, d)
    cal = d.schedule.spec.calendars[0]
    at = time(cal.hour[0].start, cal.minute[0].start)
    start = firing_for(first, at, req.time_zone, req.lag_days) - timedelta(seconds=1)
    end = firing_for(last, at, req.time_zone, req.lag_days) + timedelta(seconds=1)
    if end > datetime.now(UTC):
        raise ScheduleProblem(f"the night of {last} is not due yet (it fires at "
                              f"{end - timedelta(seconds=1):%Y-%m-%d %H:%M} UTC)")
    await client.get_schedule_handle(sid).backfill(
        ScheduleBackfill(start_at=start, end_at=end, overlap=ScheduleOverlapPolicy.BUFFER_ALL)
    )
    days = (last - first).days + 1
    return [workflow_id_for((first + timedelta(days=n)).isoformat(), warehouse) for n in range(days)]


async def ensure_demo_schedule(settings: Settings) -> str:
    """`recon dev --schedule`: the warehouse's nightly schedule at 02:00 Asia/Kolkata, unless
    one exists. Returns a line for the console."""
    from recon.runtime.temporal_client import connect

    client = await connect(settings)
    try:
        sid = await create(client, settings, settings.warehouse, "02:00", "Asia/Kolkata")
    except ScheduleProblem:
        return f"schedule {schedule_id(settings.warehouse)} exists already"
    return f"schedule {sid} created: nightly at 02:00 Asia/Kolkata (`recon schedule trigger " \
           f"--warehouse {settings.warehouse}` fires it now)"
