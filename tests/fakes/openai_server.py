"""A scriptable OpenAI-compatible server on loopback for whole nights (tests and bench/model.py).

A real HTTP server (stdlib, one thread per connection) speaking POST /v1/chat/completions. By
default it answers like a model that reads every document correctly, after `delay` seconds. A
script per invoice makes it misbehave: `ScriptedOpenAI.script(invoice_no, "429:1.5", "500", "ok")`
answers that invoice's first request with a 429 asking for 1.5 s, the second with a 500, the
third correctly. `always(invoice_no, "503")` fails it for ever.

It counts and timestamps everything it receives on its own clock (`time.time()` in the server's
threads): when a request arrived, when its answer was written, and what it answered, so a test can
check Retry-After, "no invoice answered twice" and "re-asked only what was in flight".

Steps: `ok` | `STATUS[:RETRY_AFTER]` (e.g. `503`, `429:2`) | `timeout` (answer only after
`hang` seconds, longer than the client waits) | `malformed` (not JSON) | `refuse` | `invalid`
(JSON outside the schema: quantity 0) | `qty=SKU:N` (a lying model: that SKU's quantity read as N).
The request names no invoice: the fake tells which one it is about from the document. A request
with another key than API_KEY gets a 401; `echo_key=True` quotes the key in it ("Incorrect API
key provided: Bearer sk-...").
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from recon.documents.extraction.offline import parse_document
from recon.documents.extraction.schema import UnreadableInvoice

API_KEY = "test-key"
MODEL = "gpt-test"


@dataclass
class Received:
    invoice_no: str
    arrived: float
    step: str
    status: int = 0  # 0 until the answer is written
    answered: float | None = None  # when the answer was written (None: never, e.g. hung)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    sender: str = ""  # the client's OpenAI-Project header: tells two worker processes apart


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


_NAMED = re.compile(r"\[scan (\S+?)\.pdf|Invoice No: (\S+)|invoice_no,([^,\s]+)|our bill (\S+)")


def document_of(user_message: str) -> str:
    """The request names no invoice (the answer is checked against that number): the document
    is everything after the fixed head line."""
    return user_message.partition("\n\n")[2]


def invoice_of(document: str) -> str:
    """Which invoice a request is about, read off the document as a model would (scripts are
    keyed by it)."""
    found = _NAMED.search(document)
    return next((g for g in found.groups() if g), "unknown") if found else "unknown"


def model_answer(user_message: str) -> str:
    """What a good model says: the document read into our schema (no lines if unreadable)."""
    document = document_of(user_message)
    try:
        return parse_document(document).model_dump_json()
    except UnreadableInvoice:
        return json.dumps({"invoice_no": invoice_of(document), "supplier_id": "unknown",
                           "po_number": None, "lines": []})


class ScriptedOpenAI:
    def __init__(self, delay: float = 0.0, hang: float = 5.0, echo_key: bool = False) -> None:
        self.delay, self.hang = delay, hang
        self.echo_key = echo_key  # a 401 that quotes the key it got, as some providers do
        self.received: list[Received] = []
        self._scripts: dict[str, list[str]] = defaultdict(list)
        self._always: dict[str, str] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = _Server(self)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="scripted-openai", daemon=True)

    # ------------------------------------------------------------------ set-up
    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self) -> dict[str, str]:
        return {"OPENAI_API_KEY": API_KEY, "OPENAI_BASE_URL": self.base_url, "RECON_MODEL": MODEL}

    def script(self, invoice_no: str, *steps: str) -> None:
        self._scripts[invoice_no].extend(steps)

    def always(self, invoice_no: str, step: str) -> None:
        self._always[invoice_no] = step

    # ------------------------------------------------------------------ what happened
    def snapshot(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def requests_for(self, invoice_no: str) -> list[Received]:
        return [r for r in self.snapshot() if r.invoice_no == invoice_no]

    def answered_twice(self) -> list[str]:
        counts = Counter(r.invoice_no for r in self.snapshot()
                         if r.status == 200 and r.step != "timeout")
        return [inv for inv, n in counts.items() if n > 1]

    # ------------------------------------------------------------------ answering
    def _next_step(self, invoice_no: str) -> str:
        with self._lock:
            if invoice_no in self._always:
                return self._always[invoice_no]
            steps = self._scripts.get(invoice_no)
            return steps.pop(0) if steps else "ok"

    def respond(self, body: dict, authorization: str | None, sender: str = ""
                ) -> tuple[Received, int, dict[str, str], bytes]:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        invoice_no = invoice_of(document_of(user))
        step = self._next_step(invoice_no)
        seen = Received(invoice_no, time.time(), step, sender=sender)
        with self._lock:
            self.received.append(seen)
            request_no = next(self._ids)
        if authorization != f"Bearer {API_KEY}":
            said = f": {authorization}" if self.echo_key else ""
            return self._done(seen, 401, {}, _error(f"Incorrect API key provided{said}.",
                                                    "invalid_api_key"))
        if step == "timeout":
            time.sleep(self.hang)
        elif self.delay:
            time.sleep(self.delay)
        if step[:1].isdigit():
            status, _, retry_after = step.partition(":")
            headers = {"retry-after": retry_after} if retry_after else {}
            return self._done(seen, int(status), headers,
                              _error(f"scripted {status}", "server_error"))
        content: str | None = model_answer(user)
        refusal = None
        if step == "malformed":
            content = '{"invoice_no": "' + invoice_no + '", "lines": [{"line_no": 1,'
        elif step == "refuse":
            content, refusal = None, "I'm sorry, I can't assist with that request."
        elif step.startswith("qty="):  # a lying model: `qty=SKU:40` reads that SKU's quantity as 40
            sku, _, qty = step.removeprefix("qty=").partition(":")
            data = json.loads(content or "{}")
            for line in data.get("lines", []):
                if line["sku"] == sku:
                    line["quantity"] = int(qty)
            content = json.dumps(data)
        elif step == "invalid":
            data = json.loads(content or "{}")
            for line in data.get("lines", []):
                line["quantity"] = 0
            content = json.dumps(data)
        prompt = "".join(m["content"] for m in body["messages"])
        seen.prompt_tokens = _tokens(prompt)
        seen.completion_tokens = _tokens(content or refusal or "")
        return self._done(seen, 200, {}, json.dumps({
            "id": f"chatcmpl-{request_no:06d}", "object": "chat.completion",
            "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": content,
                                     "refusal": refusal, "annotations": []}}],
            "usage": {"prompt_tokens": seen.prompt_tokens,
                      "completion_tokens": seen.completion_tokens,
                      "total_tokens": seen.prompt_tokens + seen.completion_tokens},
        }).encode())

    @staticmethod
    def _done(seen: Received, status: int, headers: dict[str, str],
              payload: bytes) -> tuple[Received, int, dict[str, str], bytes]:
        seen.status = status
        return seen, status, headers, payload


def _error(message: str, code: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "server_error", "param": None,
                                 "code": code}}).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        seen, status, headers, payload = self.server.fake.respond(
            body, self.headers.get("Authorization"), self.headers.get("OpenAI-Project") or "")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except OSError:
            return  # the client gave up (timeout) or died: the answer never arrived
        seen.answered = time.time()

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        """GET /received: what the server saw, for a caller in another process (bench/model.py)."""
        payload = json.dumps([r.__dict__ for r in self.server.fake.snapshot()]).encode()
        self.send_response(200 if self.path == "/received" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512

    def __init__(self, fake: ScriptedOpenAI, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.fake = fake

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that closes its keep-alive connection (or dies) is not news."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def serve(port: int, delay: float) -> None:
    """Run on its own (its own process, so its threads never compete with the worker for the
    GIL): `python -m tests.fakes.openai_server PORT DELAY`."""
    fake = ScriptedOpenAI(delay=delay)
    fake._server.server_close()
    fake._server = _Server(fake, port)
    fake.port = port
    print(f"listening on {fake.port}", flush=True)
    fake._server.serve_forever(0.05)


if __name__ == "__main__":
    serve(int(sys.argv[1]), float(sys.argv[2]))
