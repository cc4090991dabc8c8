"""Every activity the worker serves, built once per worker with its resources (activities as
methods that carry their state: the pool, extractor, settings and client come in here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities.decisions import DecisionActivities
from activities.extraction import ExtractionActivities
from activities.handovers import HandoverActivities
from activities.invoices import InvoiceActivities
from activities.matching import MatchingActivities
from activities.messages import MessageActivities
from activities.model_batches import ModelBatchActivities
from activities.posting import PostingActivities
from activities.requests import RequestActivities
from activities.resources import Resources
from activities.schedules import ScheduleActivities
from activities.sources import SourceActivities
from activities.undo import UndoActivities
from activities.weighing import WeighingActivities


def activities_for(resources: Resources) -> list[Callable[..., Any]]:
    """The bound activity methods: the steps in order (and the redo's weigh_again), then the
    handover, decision, request, undo and schedule activities."""
    sources = SourceActivities(resources)
    invoices = InvoiceActivities(resources)
    matching = MatchingActivities(resources)
    weighing = WeighingActivities(resources)
    extraction = ExtractionActivities(resources)
    model_batches = ModelBatchActivities(resources)
    posting = PostingActivities(resources)
    messages = MessageActivities(resources)
    handover = HandoverActivities(resources)
    undo = UndoActivities(resources)
    schedule = ScheduleActivities(resources)
    decisions = DecisionActivities(resources)
    requests = RequestActivities(resources)
    return [
        sources.fetch_sources,
        invoices.fetch_invoices,
        extraction.extract_lines,
        model_batches.submit_model_batches,
        model_batches.wait_for_model_batch,
        model_batches.read_model_batch,
        matching.match_orders,
        matching.read_stock,
        weighing.compare_quantities,
        weighing.flag_mismatches,
        weighing.weigh_again,
        posting.post_adjustments,
        posting.update_stock,
        messages.send_debit_notes,
        messages.send_summary,
        handover.record_handover,
        handover.record_decision,
        handover.send_reminder,
        handover.check_evidence,
        handover.park_invoices,
        decisions.check_decision,
        decisions.approver_keys,
        decisions.approver_passkeys,
        requests.check_signed_request,
        undo.open_next_generation,
        undo.withdraw_debit_notes,
        undo.reverse_stock_movements,
        undo.reverse_ledger_entries,
        schedule.resolve_night,
    ]
