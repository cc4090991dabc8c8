"""What crosses Temporal's history: ids, counts and references, never bulk data."""

from __future__ import annotations

from pydantic import BaseModel, Field

from recon.domain import keys
from recon.domain.labels import RunStatus
from recon.domain.settings_table import MODEL_MODES, default_of, run_input


class PasskeyProof(BaseModel):
    """A WebAuthn assertion over a decision or a signed request (docs/desk.md), besides its
    signature (which travels in `Decision.signature` or the request's `signature`, standard
    base64): the credential that signed, and the bytes the authenticator signed over, base64url
    as the browser gives them. The challenge inside `client_data_json` is the SHA-256 of the
    decision's or request's canonical form (the bytes the CLI signs with Ed25519)."""

    credential_id: str
    authenticator_data: str
    client_data_json: str


class RunRequest(BaseModel):
    """Everything the run needs to decide, fixed at start so replay sees the same values."""

    business_date: str
    warehouse: str
    # The gate's limits and the finance head's address are the worker's configuration, not the
    # run's (whoever starts a run must not widen its gate or redirect its mail): runs started
    # before carry `finance_head_email` and `max_*` fields here, which are now ignored.
    # Defaults and bounds are the settings' (recon.domain.settings_table): a run started without a
    # field replays with the setting's default. Bounded and finite: a raw `temporal workflow start`
    # with `nan` or `inf` is refused when the input is decoded, with the field's name, never run.
    extract_batch_size: int = Field(**run_input("RECON_EXTRACT_BATCH"))
    post_batch_size: int = Field(**run_input("RECON_POST_BATCH"))
    heartbeat_seconds: float = Field(**run_input("RECON_HEARTBEAT_SECONDS"))
    # Step 2 through the provider's batch interface (docs/model-calls.md "Batch mode"), and how
    # long the night waits between two looks at its batch.
    model_mode: str = Field(default=default_of("RECON_MODEL_MODE"), pattern=f"^({'|'.join(MODEL_MODES)})$")
    model_batch_poll_seconds: float = Field(**run_input("RECON_MODEL_BATCH_POLL"))
    # While a handover waits, a reminder goes out each morning at this UTC time (09:00 IST).
    reminder_utc_time: str = Field(default=default_of("RECON_REMINDER_UTC"),
                                   pattern=r"^\d{2}:\d{2}:\d{2}$")
    # A redo (`recon redo`) runs this same workflow under its own id for a night that was undone:
    # steps 1-6 are already in Postgres under `redo_of`, so it posts, books and notifies again,
    # under the night's keys in the current generation, for one supplier or the whole night.
    redo_of: str | None = None
    redo_supplier: str | None = None
    redo_reason: str = ""
    redo_by: str = ""
    # The redo is a signed request (recon.domain.requests, purpose recon-redo/1), checked by the
    # workflow before it posts anything; `redo_by` is then the key's owner.
    redo_signed_at: str = ""
    redo_signature: str = ""
    # signed by a passkey on the desk instead of an Ed25519 key: the rest of the assertion
    redo_passkey: PasskeyProof | None = None


class StepInput(BaseModel):
    """Every step gets the run's identity; the data it needs is in Postgres under workflow_id."""

    workflow_id: str
    business_date: str
    warehouse: str


class ModelBatchNight(BaseModel):
    workflow_id: str


class ModelBatchGroup(BaseModel):
    """One group of a night's batch mode: its key in `model_batches`."""

    workflow_id: str
    key: str


class ExtractBatch(BaseModel):
    workflow_id: str
    first_seq: int
    last_seq: int


class PostInput(BaseModel):
    workflow_id: str
    warehouse: str
    batch_size: int = default_of("RECON_POST_BATCH")
    supplier_id: str | None = None  # a redo of one supplier; None: the whole night


class OutboxInput(BaseModel):
    workflow_id: str
    business_date: str
    warehouse: str
    supplier_id: str | None = None  # a redo of one supplier; None: the whole night


class GateInput(BaseModel):
    """Which night the gate weighs; the limits are the worker's (recon.domain.gate_policy)."""

    workflow_id: str
    supplier_id: str | None = None  # a redo of one supplier checks that supplier's writes


class Count(BaseModel):
    """A step's result: how many things it handled, and how many it parked."""

    count: int
    parked: int = 0


class PostResult(BaseModel):
    expected: int
    inserted: int
    already_there: int
    walked_again: int = 0
    started_at: int = 0
    amount_paise: int = 0


class Progress(BaseModel):
    workflow_id: str
    status: str = RunStatus.RUNNING.value
    current_step: str | None = None
    steps_done: list[str] = Field(default_factory=list)
    handovers: int = 0
    invoices: int = 0
    extracted: int = 0
    parked: int = 0
    lines: int = 0
    matched: int = 0
    mismatches: int = 0
    ledger_posted: int = 0
    stock_moved: int = 0
    debit_notes: int = 0


class RunSummary(BaseModel):
    workflow_id: str
    status: str
    invoices: int
    parked: int
    mismatches: int
    ledger_posted: int
    adjustment_total_paise: int  # the ₹ entries' sum (older histories: every entry's)
    stock_movements: int
    debit_notes: int
    summary_key: str | None = None
    # The live entries' sum per currency, in each one's minor unit ({"INR": 242500, "EUR": 7833}):
    # two currencies are never added. Read from Postgres by the step that sends the summary, so a
    # history recorded before it replays (the field is then empty).
    adjustment_totals: dict[str, int] = Field(default_factory=dict)
    # The night as a person reads it on the run's page in the Web UI ("Completed: 4 claims,
    # ₹6,00,000 adjusted, 2 debit notes, 0 invoices parked"); the fields above stay for programs.
    # Empty in results of runs recorded before it (patch web-ui-words).
    in_words: str = ""

    def adjustments_in_words(self) -> str:
        """The adjustment total as people read it: per currency ("₹2,425, €78.33")."""
        from recon.domain.money import amounts

        return amounts(self.adjustment_totals or {"INR": self.adjustment_total_paise})


DECISIONS = ("resume", "retry", "undo")


class HandoverRequest(BaseModel):
    workflow_id: str  # the Temporal workflow that waits (the night, or a redo of it)
    posted_for: str | None = None  # whose writes the note reports (a redo reports its night's)
    handover_no: int
    step: str
    error_type: str
    error_message: str
    attempts: int
    next_action: str


class HandoverNote(BaseModel):
    workflow_id: str
    handover_no: int
    step: str
    error_type: str
    error_message: str
    attempts: int
    note: str


class Decision(BaseModel):
    """A person's answer. It names the handover it answers; any other number is refused."""

    decision: str
    by: str
    note: str = ""
    handover_no: int = 0
    # Go on without these invoices: parked with who and why, left out of ledger, stock and notes.
    park: list[str] = Field(default_factory=list)
    # The approver's Ed25519 signature (base64) of recon.domain.decisions.canonical_decision,
    # made at `signed_at`; `by` is the name of the key's owner (docs/design.md §3).
    signed_at: str = ""
    signature: str = ""
    # signed by a passkey on the desk instead of an Ed25519 key: the rest of the assertion
    passkey: PasskeyProof | None = None


class RecordedDecision(BaseModel):
    workflow_id: str
    handover_no: int
    decision: str
    by: str  # the key's owner (since signed decisions; a typed name in older runs)
    note: str = ""
    decided_at: str
    park: list[str] = Field(default_factory=list)
    confirmed_by: str = ""  # four eyes: the second approver, when one was needed


class IgnoredDecision(BaseModel):
    """A signal that could not be taken (stale, unknown, unsigned): kept on the run, not dropped.
    Its text fields are cut to the validator's bounds before they reach the memo."""

    decision: str
    by: str
    handover_no: int
    reason: str
    received_at: str


class ParkRequest(BaseModel):
    workflow_id: str
    handover_no: int
    invoices: list[str]
    by: str
    reason: str


class ReminderRequest(BaseModel):
    workflow_id: str
    handover_no: int
    reminder_no: int


class GateVerdict(BaseModel):
    """Before the irreversible step: empty `reasons` means the evidence is clear."""

    reasons: list[str] = Field(default_factory=list)
    # The ledger or stock does not hold what the night calls for: no decision sends notes then.
    unverified: bool = False


class UndoRequest(BaseModel):
    """What to compensate: a whole run, one supplier of it, or a list of ledger references."""

    run_workflow_id: str
    supplier_id: str | None = None
    references: list[str] = Field(default_factory=list)
    reason: str
    by: str
    heartbeat_seconds: float = default_of("RECON_HEARTBEAT_SECONDS")
    # A signed request (recon.domain.requests, purpose recon-undo/1), checked by the undo workflow
    # before it reverses anything; empty only for the undo a night starts for itself after a
    # signed `undo` decision (authorised by that decision's signature on record,
    # recon/store/mandates.py).
    signed_at: str = ""
    signature: str = ""
    passkey: PasskeyProof | None = None  # signed on the desk: the rest of the assertion

    @property
    def scope(self) -> str:
        if self.references:
            return "references"
        return f"supplier {self.supplier_id}" if self.supplier_id else "whole run"

    def workflow_id(self) -> str:
        """The undo's own workflow id, derived from its scope (the shape lives in keys)."""
        return keys.undo_workflow_id(self.run_workflow_id, self.supplier_id, self.references)


class GenerationRequest(BaseModel):
    """An undo execution opens the run's next generation before it reverses anything."""

    run_workflow_id: str
    raised_by: str


class Reversed(BaseModel):
    count: int
    paise: int = 0


class UndoResult(BaseModel):
    undo_workflow_id: str
    withdrawals: int
    stock_reversals: int
    ledger_reversals: int
    reversed_paise: int
    in_words: str = ""  # what was undone, in words and ₹ (empty before patch web-ui-words)
