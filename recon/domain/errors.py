"""Every exception class of the product, and the three failure classes of docs/design.md §2,
decided in one place.

temporary  -> retry (same keys) with growing waits until the outage window has passed
permanent  -> for one item: park it (handled where the item is known)
unknown    -> stop the run and hand it to a person

A `Refusal` is for a person at the command line: the request was understood and is refused (or
a server it needs is not there); the CLI prints its message as one line and exits 1. Each keeps
the builtin base it always had (ValueError, LookupError, RuntimeError), so code that caught that
base still catches it. A refusal is never a reason `classify` retries: it is not temporary, with
one exception, `SourceUnreachable` (a mail server that is down now).
"""

from __future__ import annotations

import asyncio
import http.client
from datetime import timedelta
from typing import Any

import asyncpg


# ------------------------------------------------------------------ refusals (the CLI's one line)
class Refusal(Exception):
    """The product refuses the request as given, or cannot serve it now; the message says why."""


class Refused(Refusal):
    """The command understood the request and refuses it; the message says why."""


class UnknownRun(Refusal, LookupError):
    """No such run in Temporal and nothing of it in Postgres."""


class UndoRefused(Refusal, ValueError):
    """The undo cannot start as asked; one line says why."""


class RedoRefused(Refusal, ValueError):
    """The redo cannot start as asked; one line says why."""


class DecisionRefused(Refusal, ValueError):
    """The decision cannot be sent as given; one line says why."""


class MandateRefused(Refusal, ValueError):
    """An activity that moves money found no mandate for it in Postgres (docs/design.md §3,
    "Mandates"): whoever called it, nothing is written. Never temporary."""


class NotRefused(Refusal, ValueError):
    """The message is not one the mail server refused, so there is nothing to resend."""


class ScheduleProblem(Refusal, LookupError):
    """The schedule is missing, exists already, or the request makes no sense; one line."""


class SeedError(Refusal, ValueError):
    """The night cannot be seeded as asked; the message says why in one line."""


class ImportProblem(Refusal, ValueError):
    """The files cannot be imported as they are; one line says why."""


class NightStarted(ImportProblem):
    """An import that would add to (or replace a document of) a night whose working set step 1
    has copied: nothing added now would ever be reconciled, so nothing is written. `status` is
    "started" from the store alone; the CLI asks Temporal for a better one (`with_status`)."""

    def __init__(self, workflow_id: str, head: str, advice: str, status: str = "started") -> None:
        self.workflow_id, self.head, self.advice = workflow_id, head, advice
        super().__init__(f"{head}: night {workflow_id} has started ({status}); {advice}")

    def with_status(self, status: str) -> NightStarted:
        return NightStarted(self.workflow_id, self.head, self.advice, status)


class MasterDataRefused(Refusal, ValueError):
    """A master data file (suppliers, orders, receipts) cannot be loaded as it is; the message is
    one line naming `file:line: field: why`, and nothing of the file was written."""


class SourceRefused(Refusal, ValueError):
    """A document source (a mailbox) refuses us for good as configured: wrong credentials, no
    such folder, an untrusted certificate, a malformed URL. Permanent: retrying cannot help, so
    the night hands over at once; the message is one line with the server's own words."""


class SourceUnreachable(Refusal, ConnectionError):
    """A document source cannot be reached now: connection refused or reset, a timeout, a TLS
    handshake cut short, a server answering UNAVAILABLE. Temporary (`classify`): the night rides
    it out within the outage window, then hands over; `outage_words` names the server and what
    it said. The one refusal that is retried, because it is about the server, not the request."""

    def __init__(self, message: str, outage_words: str | None = None) -> None:
        super().__init__(message)
        self.outage_words = outage_words or message


class BadField(ValueError):
    """One value of a master data row is not what its column takes; the parser adds the file,
    line and column and raises `MasterDataRefused`."""


class StackError(Refusal, RuntimeError):
    """The embedded stack could not start; the message is one line for the user."""


class DatabaseUnavailable(Refusal, RuntimeError):
    """Postgres cannot be reached: a one-line reason for the CLI, a temporary error for a step."""


class TemporalUnavailable(Refusal, RuntimeError):
    """Temporal cannot be reached; one line for the user."""


class KeyringRefused(Refusal, ValueError):
    """The payload keys (RECON_PAYLOAD_KEYS / _FILE) are malformed or unsafe; refused at start."""


class UnknownPayloadKey(Refusal, LookupError):
    """A payload names a key id the keyring does not hold (retired too early, or another
    deployment's); the message names the id."""


class PayloadUnreadable(Refusal, ValueError):
    """An encrypted payload does not open with the key it names: another namespace's, or altered."""


# ------------------------------------------------------------------ inside a run
class UnreadableInvoice(Exception):
    """Permanent for this one invoice: nobody can read it as it stands. The run parks it."""

    def __init__(self, reason: str, evidence: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.evidence = evidence


class RefusedDocument(UnreadableInvoice):
    """A document that is no invoice to reconcile, whatever it says: hostile XML (a DTD or an
    entity), a document of another kind (a delivery note, an order), or one its sender marked as
    a test. The importer refuses that file alone, naming it and what it is; a stored one is parked.
    `what` says what the document is, without a file name, for the importer to put the name in."""

    def __init__(self, reason: str, what: str = "") -> None:
        super().__init__(reason)
        self.what = what or reason


class HostileXml(RefusedDocument):
    """XML that declares a DTD or entities: refused before anything in it is expanded or read."""


class UndoRequested(Exception):
    """Workflow control flow: a person decided the whole run must be undone. Raised and caught
    inside NightlyReconciliation; never crosses an activity or the CLI."""

    def __init__(self, decision: Any) -> None:  # a recon.domain.models.RecordedDecision
        super().__init__(decision.decision)
        self.decision = decision


class ChaosFailed(Exception):
    """The verdict is FAIL; the message is the reason, in one line."""


class KeyPayloadConflict(Exception):
    """The same idempotency key arrived with a different payload: a bug, not a duplicate."""


class VerificationFailed(Exception):
    """A step reached its end but the store does not hold what the step meant to write."""


class StaleAttempt(Exception):
    """This attempt's fencing token is older than the newest one: its work was handed over."""


TEMPORARY_PG = (
    asyncpg.SerializationError,
    asyncpg.DeadlockDetectedError,
    asyncpg.TooManyConnectionsError,
    asyncpg.CannotConnectNowError,
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.InterfaceError,
    asyncpg.QueryCanceledError,
    asyncpg.AdminShutdownError,
    # A connection Postgres dropped mid-operation (a killed or restarted server) can leave asyncpg
    # refusing the rollback: "cannot switch to state 12; another operation (2) is in progress".
    # Seen when Postgres was killed during step 1's fetch; the attempt is retried like any outage.
    asyncpg.InternalClientError,
)


def _is_temporary_model_error(exc: BaseException) -> bool:
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a dependency
        return False
    if isinstance(exc, openai.RateLimitError | openai.APIConnectionError | openai.APITimeoutError):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _is_temporal_unreachable(exc: BaseException) -> bool:
    from temporalio.service import RPCError, RPCStatusCode

    return isinstance(exc, RPCError) and exc.status in (
        RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.UNKNOWN,
        RPCStatusCode.RESOURCE_EXHAUSTED, RPCStatusCode.ABORTED, RPCStatusCode.INTERNAL,
    )


# Postgres's transaction rollback class, as the server says it (SQLSTATE): a serialization failure
# and a detected deadlock. Either means "this transaction lost a race, run it again": nothing it
# wrote stays, and the keys make the redo harmless. Matched by code too, because asyncpg names the
# class after the code it was given, and a wrapper may carry only the code.
CONFLICT_SQLSTATES = frozenset({"40001", "40P01"})

# Verdicts this product raises on purpose: whatever they were raised from, they are not temporary.
_VERDICTS: tuple[type[BaseException], ...] = (
    Refusal, UnreadableInvoice, KeyPayloadConflict, VerificationFailed, StaleAttempt,
)


def is_transaction_conflict(exc: BaseException) -> bool:
    """A deadlock or serialization failure, by class or by SQLSTATE (this error alone)."""
    return (isinstance(exc, asyncpg.SerializationError | asyncpg.DeadlockDetectedError)
            or getattr(exc, "sqlstate", None) in CONFLICT_SQLSTATES)


def _own_kind(exc: BaseException) -> str:
    """'temporary' or 'unknown' by this error's own class, not by what it was raised from."""
    if isinstance(exc, SourceUnreachable):  # a refusal, yet about a server that may come back
        return "temporary"
    if isinstance(exc, (*TEMPORARY_PG, ConnectionError, TimeoutError, asyncio.TimeoutError)):
        return "temporary"
    if is_transaction_conflict(exc) or isinstance(exc, OSError):
        return "temporary"
    if isinstance(exc, http.client.HTTPException):
        # The answer did not arrive whole (a body cut mid-response, a bad status line): whoever
        # asked resends under the same key; the outside ledgers wrap it (recon/ledger/wire.py).
        return "temporary"
    if _is_temporary_model_error(exc) or _is_temporal_unreachable(exc):
        return "temporary"
    return "unknown"


def _database_cause(exc: BaseException) -> BaseException | None:
    """The Postgres error a wrapper was raised from or while handling (`raise X from pg_error`, an
    error of a transaction's exit raised while the body's error was propagating), if that error
    is temporary. Only database errors are looked for down the chain: a bug raised while
    handling a timeout is still a bug, but nothing a transaction raises while it rolls back a
    deadlock can make the deadlock less temporary."""
    seen: set[int] = set()
    at = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        if (isinstance(at, TEMPORARY_PG) or is_transaction_conflict(at)) and \
                _own_kind(at) == "temporary":
            return at
        at = at.__cause__ or (None if at.__suppress_context__ else at.__context__)
    return None


def temporary_cause(exc: BaseException) -> BaseException | None:
    """The error that makes `exc` temporary (itself, a member of its group, or the database error
    it wraps), or None when it is not temporary. A group is temporary when every member is: one
    bug among them hands the run over."""
    if isinstance(exc, BaseExceptionGroup):
        causes = [temporary_cause(e) for e in exc.exceptions]
        return causes[0] if causes and all(causes) else None
    if _own_kind(exc) == "temporary":
        return exc
    if isinstance(exc, _VERDICTS):
        return None
    return _database_cause(exc)


def transaction_conflict(exc: BaseException) -> BaseException | None:
    """The deadlock or serialization failure `exc` is, or carries, if any (see `temporary_cause`)."""
    cause = temporary_cause(exc)
    return cause if cause is not None and is_transaction_conflict(cause) else None


def classify(exc: BaseException) -> str:
    """'temporary' or 'unknown'. Permanent-for-one-item failures never reach here: they park.
    A deadlock or serialization failure is temporary wherever it surfaces: on its own, inside a
    group, or as what another error was raised from."""
    return "temporary" if temporary_cause(exc) is not None else "unknown"


def outage_in_words(exc: BaseException) -> str:
    """What a temporary error means for the person reading a handover note."""
    exc = temporary_cause(exc) or exc
    words = getattr(exc, "outage_words", None)  # an error that says what went away
    if isinstance(words, str):
        return words
    if _is_temporal_unreachable(exc):
        return "Temporal unreachable"
    if _is_temporary_model_error(exc):
        status = getattr(exc, "status_code", None)
        return f"model provider answering {status}" if status else "model provider unreachable"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):  # an OSError too: ask first
        return "timed out"
    if is_transaction_conflict(exc):
        return "database conflicts with a racing attempt"
    if isinstance(exc, http.client.HTTPException):
        return "a connection cut mid-answer"
    if isinstance(exc, (*TEMPORARY_PG, OSError)):
        return "database unreachable"
    return "temporary errors"


TEMPORARY_FIRST_WAIT = timedelta(seconds=1)


def retry_wait(kind: str, attempt: int) -> timedelta | None:
    """How long the next attempt waits after this error: 1 s, 2 s, 4 s for a temporary error
    (the service that pushed back needs time), None (the policy's short wait) otherwise. The
    policy's 0.1 s is meant for a lost worker, where nothing needs to recover."""
    if kind != "temporary":
        return None
    return TEMPORARY_FIRST_WAIT * 2 ** max(attempt - 1, 0)
