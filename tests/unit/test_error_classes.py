"""Error classes (docs/design.md §2): what is temporary is retried, everything else hands over;
a temporary error is put in words a person reads in the handover note."""

from __future__ import annotations

import asyncio
import http.client

import asyncpg
import httpx2 as httpx
import openai
import pytest
from temporalio.service import RPCError, RPCStatusCode

from recon.domain import errors
from recon.domain.errors import (
    KeyPayloadConflict,
    StaleAttempt,
    VerificationFailed,
    classify,
    outage_in_words,
)

URL = "http://127.0.0.1:1/v1/chat/completions"


def _request() -> httpx.Request:
    return httpx.Request("POST", URL)


def _status(cls: type[openai.APIStatusError], code: int) -> openai.APIStatusError:
    return cls(f"HTTP {code}", response=httpx.Response(code, request=_request()), body=None)


def _rpc(status: RPCStatusCode) -> RPCError:
    return RPCError(f"rpc {status.name}", status, b"")


CONFLICT_WORDS = "database conflicts with a racing attempt"

TEMPORARY = {
    "body-cut": (http.client.IncompleteRead(b"{\"id\": 1, \"res", 40), "a connection cut mid-answer"),
    "bad-status-line": (http.client.BadStatusLine("garbage"), "a connection cut mid-answer"),
    "closed-before-answer": (http.client.RemoteDisconnected("closed"), "a connection cut mid-answer"),
    "pg-serialization": (asyncpg.SerializationError("could not serialize"), CONFLICT_WORDS),
    "pg-deadlock": (asyncpg.DeadlockDetectedError("deadlock"), CONFLICT_WORDS),
    "pg-too-many": (asyncpg.TooManyConnectionsError("too many"), "database unreachable"),
    "pg-cannot-connect": (asyncpg.CannotConnectNowError("starting up"), "database unreachable"),
    "pg-gone": (asyncpg.ConnectionDoesNotExistError("closed"), "database unreachable"),
    "pg-interface": (asyncpg.InterfaceError("pool closed"), "database unreachable"),
    "pg-dropped-mid-operation": (asyncpg.InternalClientError(
        "cannot switch to state 12; another operation (2) is in progress"), "database unreachable"),
    "pg-cancelled": (asyncpg.QueryCanceledError("statement timeout"), "database unreachable"),
    "pg-shutdown": (asyncpg.AdminShutdownError("terminating"), "database unreachable"),
    "conn-refused": (ConnectionRefusedError(111, "refused"), "database unreachable"),
    "conn-reset": (ConnectionResetError(104, "reset"), "database unreachable"),
    "os-error": (OSError(113, "no route to host"), "database unreachable"),
    "model-429": (_status(openai.RateLimitError, 429), "model provider answering 429"),
    "model-500": (_status(openai.InternalServerError, 500), "model provider answering 500"),
    "model-503": (_status(openai.APIStatusError, 503), "model provider answering 503"),
    "model-unreachable": (openai.APIConnectionError(request=_request()), "model provider unreachable"),
    "model-timeout": (openai.APITimeoutError(request=_request()), "model provider unreachable"),
    "temporal-unavailable": (_rpc(RPCStatusCode.UNAVAILABLE), "Temporal unreachable"),
    "temporal-deadline": (_rpc(RPCStatusCode.DEADLINE_EXCEEDED), "Temporal unreachable"),
    "temporal-exhausted": (_rpc(RPCStatusCode.RESOURCE_EXHAUSTED), "Temporal unreachable"),
    "mail-server-down": (errors.SourceUnreachable("imaps://ap@mail:993/INBOX: connection refused",
                                                  "mail server mail unreachable"),
                         "mail server mail unreachable"),
}

UNKNOWN = {
    "value-error": ValueError("period locked"),
    "key-conflict": KeyPayloadConflict("same key, other amount"),
    "verification": VerificationFailed("ledger lacks 3 entries"),
    "stale": StaleAttempt("fence 7 < 8"),
    "pg-unique": asyncpg.UniqueViolationError("duplicate key"),
    "pg-check": asyncpg.CheckViolationError("amount_paise > 0"),
    "pg-undefined-table": asyncpg.UndefinedTableError("no ledger_entries"),
    "model-400": _status(openai.BadRequestError, 400),
    "model-401": _status(openai.AuthenticationError, 401),
    "model-404": _status(openai.NotFoundError, 404),
    "temporal-not-found": _rpc(RPCStatusCode.NOT_FOUND),
    "temporal-invalid": _rpc(RPCStatusCode.INVALID_ARGUMENT),
    "key-error": KeyError("sku"),
    "mailbox-refused": errors.SourceRefused("imaps://ap@mail:993/INBOX: login: NO [AUTHENTICATIONFAILED]"),
}


@pytest.mark.parametrize(("exc", "words"), TEMPORARY.values(), ids=TEMPORARY.keys())
def test_temporary_errors_are_retried_and_said_in_words(exc: BaseException, words: str) -> None:
    assert classify(exc) == "temporary"
    assert outage_in_words(exc) == words


@pytest.mark.parametrize("exc", UNKNOWN.values(), ids=UNKNOWN.keys())
def test_everything_else_hands_the_run_to_a_person(exc: BaseException) -> None:
    assert classify(exc) == "unknown"
    assert outage_in_words(exc) == "temporary errors"


def test_a_timeout_is_temporary() -> None:
    assert asyncio.TimeoutError is TimeoutError  # one class since Python 3.11
    assert classify(TimeoutError("read timed out")) == "temporary"


def test_a_timeout_is_said_as_a_timeout() -> None:
    assert outage_in_words(TimeoutError("read timed out")) == "timed out"


REFUSALS = [errors.Refused, errors.UnknownRun, errors.UndoRefused, errors.RedoRefused,
            errors.DecisionRefused, errors.NotRefused, errors.ScheduleProblem, errors.SeedError,
            errors.ImportProblem, errors.StackError, errors.DatabaseUnavailable,
            errors.TemporalUnavailable, errors.SourceRefused]


@pytest.mark.parametrize("cls", REFUSALS, ids=lambda c: c.__name__)
def test_a_refusal_is_one_line_for_a_person_and_never_retried(cls: type[Exception]) -> None:
    assert issubclass(cls, errors.Refusal), "the CLI catches Refusal once"
    assert classify(cls("no")) == "unknown"


def test_refusals_keep_the_builtin_base_they_always_had() -> None:
    assert issubclass(errors.UnknownRun, LookupError)
    assert issubclass(errors.ScheduleProblem, LookupError)
    for cls in (errors.UndoRefused, errors.RedoRefused, errors.DecisionRefused,
                errors.NotRefused, errors.SeedError, errors.ImportProblem):
        assert issubclass(cls, ValueError)
    for cls in (errors.StackError, errors.DatabaseUnavailable, errors.TemporalUnavailable):
        assert issubclass(cls, RuntimeError)


# ------------------------------------------------------------ deadlocks and serialization failures
def _raised_from(outer: BaseException, inner: BaseException) -> BaseException:
    """`outer` as Python leaves it after `raise outer from inner`."""
    try:
        raise outer from inner
    except BaseException as exc:  # noqa: BLE001 - handed back as raised
        return exc


def _raised_while_handling(outer: BaseException, inner: BaseException) -> BaseException:
    """`outer` raised inside `except inner:` (a transaction's exit failing during a rollback)."""
    try:
        try:
            raise inner
        except BaseException:  # noqa: BLE001
            raise outer  # noqa: B904 - the implicit context is the point
    except BaseException as exc:  # noqa: BLE001
        return exc


def _by_code(sqlstate: str) -> asyncpg.PostgresError:
    """A Postgres error of a generic class that carries only the code, as a wrapper may."""
    exc = asyncpg.PostgresError("rolled back")
    exc.sqlstate = sqlstate
    return exc


DEADLOCK = asyncpg.DeadlockDetectedError("deadlock detected")
SERIALIZATION = asyncpg.SerializationError("could not serialize access")

WRAPPED_CONFLICTS = {
    "raised-from-deadlock": lambda: _raised_from(RuntimeError("posting failed"), DEADLOCK),
    "raised-from-serialization": lambda: _raised_from(ValueError("weighing"), SERIALIZATION),
    "two-wrappers-deep": lambda: _raised_from(
        RuntimeError("step"), _raised_from(LookupError("batch"), DEADLOCK)),
    "during-rollback": lambda: _raised_while_handling(RuntimeError("exit failed"), DEADLOCK),
    "code-40P01": lambda: _by_code("40P01"),
    "code-40001": lambda: _by_code("40001"),
    "wrapped-code": lambda: _raised_from(RuntimeError("lane"), _by_code("40P01")),
    "group-of-conflicts": lambda: ExceptionGroup("lanes", [DEADLOCK, SERIALIZATION]),
    "group-of-wrapped": lambda: ExceptionGroup(
        "lanes", [_raised_from(RuntimeError("lane 1"), DEADLOCK), SERIALIZATION]),
}


@pytest.mark.parametrize("make", WRAPPED_CONFLICTS.values(), ids=WRAPPED_CONFLICTS.keys())
def test_a_deadlock_or_serialization_failure_is_temporary_however_it_arrives(make) -> None:
    exc = make()
    assert classify(exc) == "temporary"
    assert errors.transaction_conflict(exc) is not None
    assert outage_in_words(exc) == CONFLICT_WORDS


NOT_TEMPORARY_FOR_ALL_THAT = {
    # A verdict the product raised on purpose stands, whatever it met on the way.
    "conflict-verdict": lambda: _raised_from(KeyPayloadConflict("other amount"), DEADLOCK),
    "verification": lambda: _raised_from(VerificationFailed("3 missing"), SERIALIZATION),
    "refusal": lambda: _raised_from(errors.Refused("no"), DEADLOCK),
    # A bug among temporary errors still hands the run over.
    "group-with-a-bug": lambda: ExceptionGroup("lanes", [DEADLOCK, KeyError("sku")]),
    # Only database errors are looked for down the chain: a bug raised while a file was missing
    # is a bug.
    "bug-from-os-error": lambda: _raised_from(KeyError("sku"), FileNotFoundError("x")),
    "other-rollback-code": lambda: _by_code("40002"),
    "explicitly-unchained": lambda: _raised_while_handling(
        _raised_from(ValueError("bad"), None), DEADLOCK),
}


@pytest.mark.parametrize("make", NOT_TEMPORARY_FOR_ALL_THAT.values(),
                         ids=NOT_TEMPORARY_FOR_ALL_THAT.keys())
def test_what_is_not_a_conflict_is_not_made_one(make) -> None:
    exc = make()
    assert classify(exc) == "unknown"
    assert errors.transaction_conflict(exc) is None


def test_the_mail_sender_never_parks_a_message_for_a_database_conflict() -> None:
    from recon.mail.failures import classify as mail_failure

    for exc in (DEADLOCK, SERIALIZATION, _raised_from(RuntimeError("render"), DEADLOCK)):
        assert not mail_failure(exc).permanent


def test_a_command_that_lost_a_race_says_so_in_one_line_and_exits_tempfail(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Not a traceback (a bug) and not a refusal of the input (a ValueError wrapper): a race the
    person can answer by running the command again, with sysexits' EX_TEMPFAIL for scripts."""
    import typer

    from recon.cli.common import TEMPFAIL, user_errors

    @user_errors
    def command() -> None:
        raise ValueError("loading suppliers") from DEADLOCK

    with pytest.raises(typer.Exit) as exited:
        command()
    assert exited.value.exit_code == TEMPFAIL == 75
    said = capsys.readouterr().err.strip()
    assert said.startswith("error: ") and "\n" not in said
    assert "DeadlockDetectedError" in said and "run the command again" in said
