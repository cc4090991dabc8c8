"""What the Web UI shows of a running night: the text of its *current details*, its activity
summaries and the memo's headline. Pure functions of the run's progress, so the workflow stays
about deciding; they run inside workflow code, so they must stay deterministic (no clock, no I/O).
"""

from __future__ import annotations

from typing import Any

from recon.domain import steps
from recon.domain.models import Progress, RecordedDecision, UndoResult
from recon.domain.money import amounts, rupees
from recon.domain.wording import count

STEP_TITLES: dict[str, tuple[int, str]] = {s.name: (s.number, s.title)
                                          for s in (steps.FETCH_SOURCES, *steps.TABLE)}
ANSWER = ("Answer with `recon approve RUN --handover N --decision resume|retry|undo` (signed with "
          "your approver key, RECON_APPROVER_KEY), or in the Web UI send the Update `decide` with "
          "the signed JSON `recon approve ... --print` prints: {\"decision\": \"resume\", "
          "\"by\": \"NAME\", \"handover_no\": N, \"note\": \"why\", \"signed_at\": \"…\", "
          "\"signature\": \"…\"}.")


def _figures(p: Progress) -> str:
    return (f"invoices {p.invoices:,} · extracted {p.extracted:,} · parked {p.parked:,} · "
            f"mismatches {p.mismatches:,} · ledger {p.ledger_posted:,} · stock {p.stock_moved:,} · "
            f"debit notes {p.debit_notes:,}")


def step_details(step: str, p: Progress) -> str:
    number, title = STEP_TITLES.get(step, (0, step))
    what = {
        "extract_lines": f": {p.extracted:,} of {p.invoices:,} invoices",
        "post_adjustments": f": {p.mismatches:,} adjustments to post",
        "update_stock": f": after {p.ledger_posted:,} ledger entries",
    }.get(step, "")
    head = f"step {number} of {steps.STEP_COUNT}, {title}{what}" if number else title
    return f"**{head}**\n\n{_figures(p)}"


def waiting_details(handover_no: int, step: str, error_type: str, message: str, p: Progress) -> str:
    return (f"**waiting for a decision on handover #{handover_no}: {step} — {error_type}**\n\n"
            f"{message[:300]}\n\n{ANSWER}\n\n{_figures(p)}")


def finished_details(status: str, p: Progress, totals: dict[str, int] | None = None,
                     undone: str = "the whole night") -> str:
    """The last *Current details*: the night in words (₹ in Indian grouping) over its figures."""
    return f"**{night_in_words(status, p, totals, undone)}**\n\n{_figures(p)}"


def night_in_words(status: str, p: Progress, totals: dict[str, int] | None = None,
                   undone: str = "the whole night") -> str:
    """How a finished night reads to a person: "Completed: 4 claims, ₹6,00,000 adjusted, 2 debit
    notes". A claim is a ledger adjustment posted; `totals` are its sums per currency in each
    one's minor unit (None: not known, as for a night undone by its own decision); `undone` is
    the scope a night undone by its own decision compensated."""
    if status == "Undone":
        return (f"Undone: {undone} compensated ({count(p.invoices, 'invoice')} read, "
                f"nothing of it left in the books)")
    said = [count(p.ledger_posted, "claim")]
    if totals is not None:
        said.append(f"{amounts(totals)} adjusted")
    said += [count(p.debit_notes, "debit note"), f"{count(p.parked, 'invoice')} parked"]
    return f"{status}: {', '.join(said)}"


def undo_in_words(night: str, scope: str, result: UndoResult) -> str:
    """An undo's outcome as its page (and the night's undo row in the list) reads."""
    return (f"Undone: {night} ({scope}): {count(result.ledger_reversals, 'ledger entry', 'ledger entries')} "
            f"reversed ({rupees(result.reversed_paise)} in ₹), "
            f"{count(result.stock_reversals, 'stock movement')} reversed, "
            f"{count(result.withdrawals, 'debit note')} withdrawn")


def activity_summary(name: str, arg: Any) -> str:
    first, last = getattr(arg, "first_seq", None), getattr(arg, "last_seq", None)
    if first is not None and last is not None:
        return f"extract invoices {first}–{last}"
    number, title = STEP_TITLES.get(name, (0, name.replace("_", " ")))
    return f"step {number}: {title}" if number else title


def headline(status: str, p: Progress, adjustment_total_paise: int | None = None) -> dict[str, Any]:
    """The memo's figures that outlive the run (the Web UI shows memo on the run's page)."""
    figures: dict[str, Any] = {
        "status": status, "invoices": p.invoices, "parked": p.parked, "mismatches": p.mismatches,
        "ledger_entries": p.ledger_posted, "stock_movements": p.stock_moved,
        "debit_notes": p.debit_notes, "handovers": p.handovers,
    }
    if adjustment_total_paise is not None:
        figures["adjustment_total_paise"] = adjustment_total_paise
    return figures


def headline_in_words(status: str, p: Progress, totals: dict[str, int] | None = None,
                      undone: str = "the whole night") -> dict[str, Any]:
    """The memo's headline as people read it (newer runs): the night in a sentence and the
    adjusted amounts in ₹ with Indian grouping; counts stay numbers, no amount is in paise."""
    figures: dict[str, Any] = {
        "night": night_in_words(status, p, totals, undone), "status": status, "invoices": p.invoices,
        "parked": p.parked, "mismatches": p.mismatches, "ledger_entries": p.ledger_posted,
        "stock_movements": p.stock_moved, "debit_notes": p.debit_notes, "handovers": p.handovers,
    }
    if totals is not None:
        figures["adjusted"] = amounts(totals)
    return figures


def decision_record(decided: list[RecordedDecision]) -> list[dict[str, Any]]:
    return [{"handover": d.handover_no, "decision": d.decision, "by": d.by, "note": d.note,
             "at": d.decided_at, "parked": d.park} for d in decided]
