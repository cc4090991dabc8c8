"""The OpenAI extractor against a real HTTP server on loopback that speaks Chat Completions.

The fake is a real server on 127.0.0.1 (stdlib `http.server` in a thread): the SDK, httpx and the
wire format are all exercised, nothing is patched. It records every request it receives and can be
told to answer correctly (by reading the document in the user message, as a model would), to
answer with JSON that fails our schema, to refuse, or to fail once with an HTTP status.

No Postgres and no Temporal: this module replaces conftest's autouse `_settings_env` (which needs
the session `stack`) with one that only cleans the environment.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openai
import pytest
import pytest_asyncio

from recon.documents.extraction.answer import Answer, read_answer
from recon.documents.extraction.choice import make_extractor
from recon.documents.extraction.failures import describe
from recon.documents.extraction.offline import parse_document
from recon.documents.extraction.openai_model import SYSTEM_PROMPT, OpenAIExtractor
from recon.documents.extraction.schema import UnreadableInvoice
from recon.documents.layouts import LAYOUTS, Document, DocumentLine, render, render_unreadable
from recon.domain.errors import classify
from recon.runtime.config import load_settings

API_KEY = "test-key"
MODEL = "gpt-test"

DOC = Document(
    invoice_no="INV-20250114-LDH-00042",
    supplier_id="S006",
    supplier_name="Malabar Spices Pvt Ltd",
    business_date="2025-01-14",
    po_number="PO-LDH-20250114-00042",
    lines=[
        DocumentLine("SKU-1016", "Cashews 500g", 12, 1250),  # Rs 12.50
        DocumentLine("SKU-1008", "Ghee 1L – Amul", 1200, 12_345_678),  # Rs 1,23,456.78
        DocumentLine("SKU-1010", "Salt 1kg", 5, 5),  # Rs 0.05
    ],
)
EXPECTED_LINES = [
    (1, "SKU-1016", "Cashews 500g", 12, 1250),
    (2, "SKU-1008", "Ghee 1L – Amul", 1200, 12_345_678),
    (3, "SKU-1010", "Salt 1kg", 5, 5),
]


# --------------------------------------------------------------------------------------------
# The fake OpenAI: a real HTTP server speaking enough of POST /v1/chat/completions.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """One request exactly as it arrived."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict

    def user_message(self) -> str:
        return next(m["content"] for m in self.body["messages"] if m["role"] == "user")


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class FakeOpenAI:
    """State shared by the handler threads. Default behaviour: answer correctly."""

    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.requests: list[Seen] = []
        self.contents: list[str | None] = []  # `message.content` of every completion sent
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._failures: list[int] = []
        self._content: str | None = None
        self._refusal: str | None = None
        self.port = 0

    # what to do next ---------------------------------------------------------------------
    def fail_once(self, status: int) -> None:
        with self._lock:
            self._failures.append(status)

    def answer_with(self, content: str) -> None:
        with self._lock:
            self._content, self._refusal = content, None

    def refuse(self, refusal: str) -> None:
        with self._lock:
            self._content, self._refusal = None, refusal

    # what a model would say ------------------------------------------------------------
    @staticmethod
    def read_document(user_message: str) -> str:
        """The model's answer: the document read into our schema (no lines if unreadable)."""
        _, _, document = user_message.partition("\n\n")
        try:
            invoice = parse_document(document)
        except UnreadableInvoice:
            invoice_no = document.partition("[scan ")[2].partition(".pdf")[0] or "unknown"
            return json.dumps(
                {"invoice_no": invoice_no, "supplier_id": "unknown", "po_number": None, "lines": []}
            )
        return json.dumps(invoice.model_dump(mode="json"), ensure_ascii=False)

    def respond(self, seen: Seen) -> tuple[int, dict[str, str], dict]:
        """(status, extra headers, JSON body) for one request."""
        with self._lock:
            self.requests.append(seen)
            failure = self._failures.pop(0) if self._failures else None
            content, refusal = self._content, self._refusal
            request_no = next(self._ids)
        if seen.path != "/v1/chat/completions" or seen.method != "POST":
            return (
                404,
                {},
                _error(f"Unknown request URL: {seen.method} {seen.path}.", "invalid_request_error"),
            )
        if seen.headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, {}, _error("Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
        if failure == 429:
            body = _error("Rate limit reached for requests.", "requests", "rate_limit_exceeded")
            return 429, {"retry-after": "0"}, body
        if failure is not None:
            return (
                failure,
                {},
                _error("The server had an error while processing your request.", "server_error"),
            )

        if refusal is None and content is None:
            content = self.read_document(seen.user_message())
        with self._lock:
            self.contents.append(content)
        prompt = "".join(m["content"] for m in seen.body["messages"])
        completion_tokens = _tokens(content or refusal or "")
        return (
            200,
            {},
            {
                "id": f"chatcmpl-fake{request_no:06d}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": seen.body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": content,
                            "refusal": refusal,
                            "annotations": [],
                        },
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": _tokens(prompt),
                    "completion_tokens": completion_tokens,
                    "total_tokens": _tokens(prompt) + completion_tokens,
                },
                "system_fingerprint": "fp_fake",
                "service_tier": "default",
            },
        )


def _error(message: str, kind: str, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        seen = Seen(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=json.loads(raw) if raw else {},
        )
        status, headers, body = self.server.fake.respond(seen)
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("x-request-id", f"req_{len(self.server.fake.requests):06d}")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    do_POST = _handle
    do_GET = _handle

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeOpenAI) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _settings_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Replaces conftest's fixture of the same name: a clean environment, no servers needed."""
    for key in list(os.environ):
        if key.startswith(("RECON_", "OPENAI_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("RECON_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(API_KEY)
    server = _Server(fake)
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="fake-openai", daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest_asyncio.fixture
async def extractor(fake: FakeOpenAI):
    settings = replace(
        load_settings(),
        openai_api_key=API_KEY,
        openai_base_url=f"http://127.0.0.1:{fake.port}/v1",
        model=MODEL,
    )
    extractor = make_extractor(settings)
    yield extractor
    if isinstance(extractor, OpenAIExtractor):
        await extractor.client.close()


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
async def test_openai_path_end_to_end(fake: FakeOpenAI, extractor, layout: str) -> None:
    assert isinstance(extractor, OpenAIExtractor)
    assert (extractor.name, extractor.model) == ("openai", MODEL)
    document = render(DOC, layout)

    answer = await extractor.call(DOC.invoice_no, document)
    invoice = read_answer(answer)

    assert invoice.invoice_no == DOC.invoice_no
    assert invoice.supplier_id == DOC.supplier_id
    assert invoice.po_number == DOC.po_number
    got = [(x.line_no, x.sku, x.description, x.quantity, x.unit_price_paise) for x in invoice.lines]
    assert got == EXPECTED_LINES

    # Exactly one request left, and it was the request we meant to send.
    assert len(fake.requests) == 1
    seen = fake.requests[0]
    assert (seen.method, seen.path) == ("POST", "/v1/chat/completions")
    assert seen.headers["authorization"] == f"Bearer {API_KEY}"
    assert seen.body["model"] == MODEL
    assert seen.body["temperature"] == 0
    # The model is not told the invoice number its answer is checked against: only the document.
    assert seen.user_message() == f"The invoice document:\n\n{document}"
    response_format = seen.body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "InvoiceAnswer"
    assert response_format["json_schema"]["strict"] is True
    schema = response_format["json_schema"]["schema"]
    assert set(schema["required"]) == {"invoice_no", "supplier_id", "po_number", "lines"}
    assert schema["additionalProperties"] is False
    assert seen.body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert document in seen.user_message()
    assert DOC.invoice_no in seen.user_message()

    # What we record is what left, and the answer is the server's content word for word.
    recorded = json.loads(answer.request)
    assert recorded == {"model": MODEL, "messages": seen.body["messages"]}
    assert fake.contents == [answer.response]
    assert "Ghee 1L – Amul" in answer.response


BAD_ANSWERS = {
    "no lines": (
        {"invoice_no": DOC.invoice_no, "supplier_id": "S006", "po_number": None, "lines": []},
        "lines",
    ),
    "price in rupees, not paise": (
        {
            "invoice_no": DOC.invoice_no,
            "supplier_id": "S006",
            "po_number": DOC.po_number,
            "lines": [
                {
                    "line_no": 1,
                    "sku": "SKU-1016",
                    "description": "Cashews 500g",
                    "quantity": 12,
                    "unit_price_paise": 12.5,
                }
            ],
        },
        "lines.0.unit_price_paise",
    ),
    "zero quantity": (
        {
            "invoice_no": DOC.invoice_no,
            "supplier_id": "S006",
            "po_number": DOC.po_number,
            "lines": [
                {
                    "line_no": 1,
                    "sku": "SKU-1016",
                    "description": "Cashews 500g",
                    "quantity": 0,
                    "unit_price_paise": 1250,
                }
            ],
        },
        "lines.0.quantity",
    ),
    "no supplier": ({"invoice_no": DOC.invoice_no, "po_number": None, "lines": []}, "supplier_id"),
}


@pytest.mark.parametrize("case", BAD_ANSWERS, ids=list(BAD_ANSWERS))
async def test_answer_that_fails_the_schema_is_unreadable(fake: FakeOpenAI, extractor, case: str) -> None:
    data, where = BAD_ANSWERS[case]
    content = json.dumps(data, indent=2)
    fake.answer_with(content)

    answer = await extractor.call(DOC.invoice_no, render(DOC, "table"))

    assert answer.response == content  # recorded verbatim even though it is wrong
    with pytest.raises(UnreadableInvoice) as info:
        read_answer(answer)
    assert "schema" in info.value.reason
    assert f"at {where}:" in info.value.reason
    assert info.value.evidence == content[:200]
    assert len(fake.requests) == 1


async def test_unreadable_scan_gets_no_lines_and_is_unreadable(fake: FakeOpenAI, extractor) -> None:
    scan = render_unreadable(DOC, random.Random(7))

    answer = await extractor.call(DOC.invoice_no, scan)

    assert scan in fake.requests[0].user_message()
    with pytest.raises(UnreadableInvoice, match="schema at lines"):
        read_answer(answer)


async def test_refusal_is_unreadable(fake: FakeOpenAI, extractor) -> None:
    refusal = "I'm sorry, I can't assist with that request."
    fake.refuse(refusal)

    answer = await extractor.call(DOC.invoice_no, render(DOC, "letter"))

    assert fake.contents == [None]
    assert isinstance(answer, Answer)
    with pytest.raises(UnreadableInvoice) as info:
        read_answer(answer)
    assert info.value.reason == f"model refused: {refusal}"
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("status", "error"),
    [(429, openai.RateLimitError), (500, openai.InternalServerError), (503, openai.InternalServerError)],
)
async def test_http_failure_is_temporary_and_not_retried_by_the_sdk(
    fake: FakeOpenAI, extractor, status: int, error: type[openai.APIStatusError]
) -> None:
    fake.fail_once(status)
    document = render(DOC, "csv")

    with pytest.raises(openai.APIStatusError) as info:
        await extractor.call(DOC.invoice_no, document)

    assert type(info.value) is error
    assert info.value.status_code == status
    assert classify(info.value) == "temporary"
    assert len(fake.requests) == 1  # SDK retries are off: Temporal does the retrying
    assert fake.contents == []

    # Temporal's retry: the same request again, and this time the answer comes.
    answer = await extractor.call(DOC.invoice_no, document)
    assert read_answer(answer).invoice_no == DOC.invoice_no
    assert len(fake.requests) == 2
    assert fake.requests[1].body == fake.requests[0].body


@pytest.mark.parametrize(("status", "kind"), [(400, "rejected"), (413, "rejected"),
                                            (422, "rejected"), (404, "unknown")])
async def test_a_request_refused_for_its_document_is_about_that_invoice(
    fake: FakeOpenAI, extractor, status: int, kind: str
) -> None:
    """400 (context length, content filter), 413, 422: that invoice is parked, its siblings go
    on (activities/extraction_paid.py); 404 (no such model) is about every request: it stops."""
    fake.fail_once(status)
    with pytest.raises(openai.APIStatusError) as info:
        await extractor.call(DOC.invoice_no, render(DOC, "table"))
    failure = describe(info.value)
    assert (failure.kind, failure.status) == (kind, status)
    assert str(status) in failure.text()


async def test_wrong_api_key_is_not_temporary(fake: FakeOpenAI, extractor) -> None:
    fake.api_key = "another-key"

    with pytest.raises(openai.AuthenticationError) as info:
        await extractor.call(DOC.invoice_no, render(DOC, "table"))

    assert classify(info.value) == "unknown"  # a person must fix the key; retrying cannot
    assert len(fake.requests) == 1


# Keywords OpenAI's strict structured outputs accept in every model (types, structure, anyOf,
# $ref/$defs, descriptions). Length and value limits are checked on arrival by ExtractedInvoice.
STRICT_SAFE = {"type", "properties", "required", "additionalProperties", "items", "anyOf",
               "$ref", "$defs", "title", "description", "enum", "const"}


def _walk(schema: object):
    if isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            if key in ("properties", "$defs") and isinstance(value, dict):
                for sub in value.values():
                    yield from _walk(sub)
            elif key in ("items", "anyOf"):
                for sub in value if isinstance(value, list) else [value]:
                    yield from _walk(sub)


async def test_schema_sent_is_strict_mode_safe(fake: FakeOpenAI, extractor) -> None:
    await extractor.call(DOC.invoice_no, render(DOC, "table"))
    response_format = fake.requests[0].body["response_format"]
    assert response_format["json_schema"]["strict"] is True
    for node in _walk(response_format["json_schema"]["schema"]):
        assert set(node) <= STRICT_SAFE, set(node) - STRICT_SAFE
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert set(node["required"]) == set(node["properties"])


async def test_timeout_is_configurable_and_temporary(fake: FakeOpenAI) -> None:
    settings = replace(load_settings(), openai_api_key=API_KEY, model=MODEL, model_timeout=0.3,
                       openai_base_url=f"http://127.0.0.1:{fake.port}/v1")
    slow = make_extractor(settings)
    assert isinstance(slow, OpenAIExtractor)
    original = fake.respond

    def respond_slowly(seen: Seen):
        time.sleep(1.0)
        return original(seen)

    fake.respond = respond_slowly  # type: ignore[method-assign]
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError) as info:
        await slow.call(DOC.invoice_no, render(DOC, "table"))
    assert time.monotonic() - started < 0.9
    assert classify(info.value) == "temporary"
    await slow.client.close()
