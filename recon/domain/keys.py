"""Every idempotency key shape of the product, and the workflow ids of a night, its undos and its
redos (docs/design.md §1). Not yet every id: the Schedule's id is spelled in recon/ops/schedules.py,
`recon chaos` builds its night's id itself, and recon/mail/documents.py reads ids back by pattern.

Every idempotency key starts with the workflow id of the night (never a Temporal run id), so a
reset or a redo collides with what the night already wrote. A redo after an undo needs fresh
keys: the generation (1 + undos the run has seen, issued by Postgres) is carried as a suffix.
The SQL function `recon_key` (migration 011) is the same rule; tests/store/test_keys.py holds them together.

Set-based statements that build a key per row (100k rows never pass through Python) get the
shape from here as a `format()` template (`row_template`), so no key is spelled in SQL.

Never change a shape: kept histories and existing rows depend on every key's exact value.
This module is pure (no I/O, no clock): workflow code uses it too.
"""

from __future__ import annotations

import hashlib
import re
import string

# ------------------------------------------------------------------ shapes
NIGHT = "recon-{business_date}-{warehouse}"
ADJUSTMENT = "{workflow_id}:{invoice_no}:{line_no}:{kind}"
MOVEMENT = "{workflow_id}:stock:{invoice_no}:{line_no}"
DEBIT_NOTE = "{workflow_id}:debit-note:{supplier_id}"
SUMMARY = "{workflow_id}:summary"
HANDOVER = "{workflow_id}:handover:{handover_no}"
REMINDER = HANDOVER + ":reminder:{reminder_no}"
PARKED_INVOICE = "invoice:{invoice_no}"
# An invoice is its supplier's number: what the run's working set and every key carry in
# `{invoice_no}` since migration 050 (docs/design.md §1, "Invoice references").
INVOICE_REF = "{supplier_id}:{invoice_no}"
PARKED_LINE = "line:{invoice_no}:{line_no}"
FENCE_SCOPE = "{workflow_id}:{store}"
UNDO_PREFIX = "undo"
UNDO_WORKFLOW_PREFIX = "undo-"
REDO_WORKFLOW_PREFIX = "redo-"


def row_template(shape: str, **fixed: str) -> str:
    """A Postgres `format()` template of `shape`: the `fixed` fields filled in, each other field
    a `%s` in the order the shape names them (the statement passes the columns in that order).
    A literal `%` is doubled, so a filled-in value can never be read as a placeholder."""
    out = []
    for literal, field, _spec, _conv in string.Formatter().parse(shape):
        out.append(literal.replace("%", "%%"))
        if field is not None:
            out.append(str(fixed[field]).replace("%", "%%") if field in fixed else "%s")
    return "".join(out)


# ------------------------------------------------------------------ workflow ids
WAREHOUSE_CODE = r"[a-z0-9][a-z0-9_-]{0,31}"  # what `--warehouse` accepts
_NIGHT_ID = re.compile(r"recon-(\d{4}-\d{2}-\d{2})-(" + WAREHOUSE_CODE + ")")


def night_of(workflow_id: str) -> tuple[str, str] | None:
    """(business date, warehouse) of a night's workflow id, or None for an id of another shape."""
    m = _NIGHT_ID.fullmatch(workflow_id)
    return (m.group(1), m.group(2)) if m else None


def workflow_id_for(business_date: str, warehouse: str) -> str:
    """One run per warehouse per night; every idempotency key starts with this id."""
    return NIGHT.format(business_date=business_date, warehouse=warehouse)


def redo_workflow_id(run_workflow_id: str, supplier_id: str | None, generation: int) -> str:
    """A redo of a generation is one workflow: two `recon redo` at once attach to the same one."""
    scope = f"-supplier-{supplier_id}" if supplier_id else ""
    return f"{REDO_WORKFLOW_PREFIX}{run_workflow_id}{scope}-g{generation}"


def is_redo_of(workflow_id: str, run_workflow_id: str) -> bool:
    """Is `workflow_id` a redo (of the whole night or one supplier, any generation) of the run?"""
    shape = re.escape(f"{REDO_WORKFLOW_PREFIX}{run_workflow_id}") + r"(-supplier-.+)?-g\d+"
    return re.fullmatch(shape, workflow_id) is not None


def undo_workflow_id(run_workflow_id: str, supplier_id: str | None = None,
                     references: list[str] | tuple[str, ...] = ()) -> str:
    """Derived from the run and the scope: starting the same undo twice is the same workflow."""
    base = f"{UNDO_WORKFLOW_PREFIX}{run_workflow_id}"
    if references:
        digest = hashlib.sha256("\n".join(sorted(set(references))).encode()).hexdigest()[:10]
        return f"{base}-refs-{digest}"
    if supplier_id:
        return f"{base}-supplier-{supplier_id}"
    return base


def companions_of(run_workflow_id: str, prefix: str) -> str:
    """A visibility query for the running undo (or redo) workflows of a night."""
    return f'WorkflowId STARTS_WITH "{prefix}{run_workflow_id}" AND ExecutionStatus = "Running"'


# ------------------------------------------------------------------ invoice references
# A supplier id holds no colon (letters, digits, `-`, `_`), so the first colon of a reference
# ends it; the number after it may hold colons of its own.
_SUPPLIER_CODE = re.compile(r"[A-Za-z0-9_-]{1,32}")


def invoice_ref(supplier_id: str, number: str) -> str:
    """The run's name for an invoice: invoice numbers are unique per supplier only, so two
    suppliers' INV-7001 are two invoices (`S001:INV-7001`, `S002:INV-7001`)."""
    return INVOICE_REF.format(supplier_id=supplier_id, invoice_no=number)


def split_ref(ref: str, supplier_id: str | None = None) -> tuple[str | None, str]:
    """(supplier id, the supplier's own number) of a reference; (None, ref) for a number of a
    night posted before references (no supplier prefix). Given the row's `supplier_id`, only
    that prefix counts, so an old number with a colon in it (`A:17` of supplier S001) stays
    whole; without it, a first part that can be a supplier id is taken as one."""
    if supplier_id is not None:
        prefix = f"{supplier_id}:"
        return (supplier_id, ref[len(prefix):]) if ref.startswith(prefix) else (None, ref)
    head, colon, rest = ref.partition(":")
    if colon and rest and _SUPPLIER_CODE.fullmatch(head):
        return head, rest
    return None, ref


def number_of(ref: str, supplier_id: str | None = None) -> str:
    """The supplier's own number (what its document says, what a debit note quotes)."""
    return split_ref(ref, supplier_id)[1]


def invoice_label(ref: str, supplier_id: str | None = None) -> str:
    """How finance reads an invoice: `INV-7001 (S001)`; a number of an old night as it is."""
    supplier, number = split_ref(ref, supplier_id)
    return f"{number} ({supplier})" if supplier else number


# ------------------------------------------------------------------ store keys
def adjustment_key(workflow_id: str, invoice_no: str, line_no: int, kind: str) -> str:
    return ADJUSTMENT.format(workflow_id=workflow_id, invoice_no=invoice_no, line_no=line_no,
                             kind=kind)


def movement_key(workflow_id: str, invoice_no: str, line_no: int) -> str:
    return MOVEMENT.format(workflow_id=workflow_id, invoice_no=invoice_no, line_no=line_no)


def debit_note_key(workflow_id: str, supplier_id: str) -> str:
    return DEBIT_NOTE.format(workflow_id=workflow_id, supplier_id=supplier_id)


def summary_key(workflow_id: str) -> str:
    return SUMMARY.format(workflow_id=workflow_id)


def scoped_summary_key(key: str, supplier_id: str | None) -> str:
    """A redo of one supplier sends a correcting summary of its own scope."""
    return f"{key}:{supplier_id}" if supplier_id else key


def handover_key(workflow_id: str, handover_no: int) -> str:
    return HANDOVER.format(workflow_id=workflow_id, handover_no=handover_no)


def reminder_key(workflow_id: str, handover_no: int, reminder_no: int) -> str:
    return REMINDER.format(workflow_id=workflow_id, handover_no=handover_no,
                           reminder_no=reminder_no)


def parked_item_key(invoice_no: str, line_no: int | None = None) -> str:
    """A parked invoice, or one line of it: one row per item per run."""
    if line_no is None:
        return PARKED_INVOICE.format(invoice_no=invoice_no)
    return PARKED_LINE.format(invoice_no=invoice_no, line_no=line_no)


def fence_scope(workflow_id: str, store: str) -> str:
    """The fence of one store of a run (`ledger`, `stock`, `outbox`, `summary`, `extract:…`)."""
    return FENCE_SCOPE.format(workflow_id=workflow_id, store=store)


def extract_fence_store(first_seq: int, last_seq: int) -> str:
    return f"extract:{first_seq}-{last_seq}"


# ------------------------------------------------------------------ compensation, generations
def undo_key(original: str) -> str:
    return f"{UNDO_PREFIX}:{original}"


def withdrawal_key(note_key: str, references: tuple[str, ...] | list[str] = ()) -> str:
    """A whole-note withdrawal is `undo:{note}`; a partial one (a list of references) names
    which references it withdraws, so a later, different partial undo gets its own note."""
    if not references:
        return undo_key(note_key)
    digest = hashlib.sha256("\n".join(sorted(references)).encode()).hexdigest()[:10]
    return f"{undo_key(note_key)}:refs-{digest}"


def generation_key(base: str, generation: int) -> str:
    """The key of `base` in a generation: generation 1 keeps the original shape."""
    return base if generation <= 1 else f"{base}:g{generation}"
