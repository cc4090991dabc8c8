"""Every activity the worker serves, built once per worker with its resources (activities as
methods that carry their state: the pool, extractor, settings and client come in here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities.approvals import ApprovalActivities
from activities.extract_lines import ExtractionActivities
from activities.handover import HandoverActivities
from activities.messages import MessageActivities
from activities.posting import PostingActivities
from activities.reading import ReadingActivities
from activities.requests import RequestActivities
from activities.resources import Resources
from activities.schedule import ScheduleActivities
from activities.undo import UndoActivities


def activities_for(resources: Resources) -> list[Callable[..., Any]]:
    """The bound activity methods, in step order, then the handover, undo and schedule rooms."""
    reading = ReadingActivities(resources)
    extraction = ExtractionActivities(resources)
    posting = PostingActivities(resources)
    messages = MessageActivities(resources)
    handover = HandoverActivities(resources)
    undo = UndoActivities(resources)
    schedule = ScheduleActivities(resources)
    approvals = ApprovalActivities(resources)
    requests = RequestActivities(resources)
    return [
        reading.fetch_invoices,
        extraction.extract_lines,
        reading.match_orders,
        reading.read_stock,
        reading.compare_quantities,
        reading.flag_mismatches,
        reading.weigh_again,
        posting.post_adjustments,
        posting.update_stock,
        messages.send_debit_notes,
        messages.send_summary,
        handover.record_handover,
        handover.record_decision,
        handover.send_reminder,
        handover.check_evidence,
        handover.park_invoices,
        approvals.check_decision,
        requests.check_signed_request,
        undo.open_next_generation,
        undo.withdraw_debit_notes,
        undo.reverse_stock_movements,
        undo.reverse_ledger_entries,
        schedule.resolve_night,
    ]
