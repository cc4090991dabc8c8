"""Every activity the worker serves, in step order."""

from activities.extract_lines import extract_lines
from activities.handover import (
    check_evidence,
    park_invoices,
    record_decision,
    record_handover,
    send_reminder,
)
from activities.messages import send_debit_notes, send_summary
from activities.post_adjustments import post_adjustments
from activities.reading import (
    compare_quantities,
    fetch_invoices,
    flag_mismatches,
    match_orders,
    read_stock,
)
from activities.schedule import resolve_night
from activities.undo import (
    open_next_generation,
    reverse_ledger_entries,
    reverse_stock_movements,
    withdraw_debit_notes,
)
from activities.update_stock import update_stock

ACTIVITIES = [
    fetch_invoices,
    extract_lines,
    match_orders,
    read_stock,
    compare_quantities,
    flag_mismatches,
    post_adjustments,
    update_stock,
    send_debit_notes,
    send_summary,
    record_handover,
    record_decision,
    send_reminder,
    check_evidence,
    park_invoices,
    open_next_generation,
    withdraw_debit_notes,
    reverse_stock_movements,
    reverse_ledger_entries,
    resolve_night,
]
