"""The nightly schedule's arithmetic: which business date a scheduled start stands for.

A schedule fires at a local wall-clock time (02:00 Asia/Kolkata) and each firing reconciles one
business date: by default the day that has just ended (the 02:00 run on the 14th reconciles the
13th, `lag_days=1`). Kept free of Temporal so the CLI (backfill ranges) and the activity (the date
of one firing) use the same two functions.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel

from recon.domain.models import RunRequest


class NightlyStart(BaseModel):
    """What the schedule passes its NightlyStarter each time it fires: fixed at `schedule create`
    (the same settings `recon run` would take from the environment at that moment)."""

    warehouse: str
    time_zone: str
    lag_days: int = 1
    run: RunRequest  # business_date is filled in per firing


class NightToResolve(BaseModel):
    scheduled_at: str  # the firing's scheduled time, ISO 8601
    time_zone: str
    lag_days: int
    warehouse: str


class NightResolved(BaseModel):
    """The business date of one firing, resolved by an activity (tz data is not workflow code)."""

    business_date: str
    invoices: int


class StarterOutcome(BaseModel):
    """What one firing did: started the night, or found it already there (and why)."""

    workflow_id: str
    business_date: str
    outcome: str  # "completed" | "undone" | "exists" | ...: the night's status, or "exists"
    detail: str = ""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name like Asia/Kolkata)") from None


def clock(value: str) -> time:
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", value)
    if not match or int(match[1]) > 23 or int(match[2]) > 59:
        raise ValueError(f"--at must be HH:MM (24-hour local time), got {value!r}")
    return time(int(match[1]), int(match[2]))


def business_date_of(scheduled: datetime, time_zone: str, lag_days: int) -> date:
    """The business date a firing at `scheduled` reconciles, read on the schedule's local clock."""
    if scheduled.tzinfo is None:
        scheduled = scheduled.replace(tzinfo=UTC)
    return scheduled.astimezone(zone(time_zone)).date() - timedelta(days=lag_days)


def firing_for(business_date: date, at: time, time_zone: str, lag_days: int) -> datetime:
    """When the schedule fires for `business_date` (UTC): the inverse of `business_date_of`."""
    local = datetime.combine(business_date + timedelta(days=lag_days), at, tzinfo=zone(time_zone))
    return local.astimezone(UTC)
