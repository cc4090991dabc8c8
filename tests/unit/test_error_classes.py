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


TEMPORARY = {
    "body-cut": (http.client.IncompleteRead(b"{\"id\": 1, \"res", 40), "a connection cut mid-answer"),
    "bad-status-line": (http.client.BadStatusLine("garbage"), "a connection cut mid-answer"),
    "closed-before-answer": (http.client.RemoteDisconnected("closed"), "a connection cut mid-answer"),
    "pg-serialization": (asyncpg.SerializationError("could not serialize"), "database unreachable"),
    "pg-deadlock": (asyncpg.DeadlockDetectedError("deadlock"), "database unreachable"),
    "pg-too-many": (asyncpg.TooManyConnectionsError("too many"), "database unreachable"),
    "pg-cannot-connect": (asyncpg.CannotConnectNowError("starting up"), "database unreachable"),
    "pg-gone": (asyncpg.ConnectionDoesNotExistError("closed"), "database unreachable"),
    "pg-interface": (asyncpg.InterfaceError("pool closed"), "database unreachable"),
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
            errors.TemporalUnavailable]


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
