"""A ledger API that enforces a key, on loopback: the IETF Idempotency-Key draft (07) and
QuickBooks Online's `requestid`, as a test's outside ledger (RECON_LEDGER=http).

POST /entries with `Idempotency-Key: K` (or `?requestid=K` when no header):
- a new key: the entry is stored, 201 {"id": n, ...};
- the same key and the same body: the first response again, nothing stored;
- the same key and another body: 422, nothing stored;
- the same key while its first request is still being handled: 409;
- no key: 400 (the draft: the key is required on this endpoint).
Faults a test switches on: `busy_first` (answer the first N requests 409, as if a twin were in
flight), `drop_response_of` (store entry n then cut the connection: the answer is lost, the
"uncertain outcome" a key exists for), `slow_seconds` (handle every request slowly).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class KeyLedger:
    token: str | None = None
    busy_first: int = 0
    drop_response_of: set[int] = field(default_factory=set)
    slow_seconds: float = 0.0
    entries: dict[str, dict] = field(default_factory=dict)  # key -> the first body
    answers: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    in_flight: set[str] = field(default_factory=set)
    seen: list[tuple[str, int]] = field(default_factory=list)  # (key, status answered)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> KeyLedger:
        ledger = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                ledger._handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def _reply(self, handler: BaseHTTPRequestHandler, status: int, body: bytes, key: str) -> None:
        self.seen.append((key, status))
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        import time

        url = urlsplit(handler.path)
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        key = handler.headers.get("Idempotency-Key") or \
            (parse_qs(url.query).get("requestid") or [""])[0]
        if url.path.rstrip("/") != "/entries":
            return self._reply(handler, 404, b'{"error": "no such endpoint"}', key)
        if self.token and handler.headers.get("Authorization") != f"Bearer {self.token}":
            return self._reply(handler, 401, b'{"error": "unauthorized"}', key)
        if not key:
            return self._reply(handler, 400, b'{"error": "Idempotency-Key is required"}', key)
        body = json.loads(raw or b"{}")
        with self.lock:
            if key in self.in_flight or len(self.seen) < self.busy_first:
                busy = True
            else:
                busy = False
                self.in_flight.add(key)
        if busy:
            return self._reply(handler, 409, b'{"error": "a request with this key is in flight"}',
                               key)
        try:
            time.sleep(self.slow_seconds)
            with self.lock:
                if key in self.entries:
                    if self.entries[key] != body:
                        first = json.dumps(self.entries[key], sort_keys=True)
                        answer = (422, json.dumps({
                            "error": "Idempotency-Key reused with another body",
                            "first_body": json.loads(first)}).encode())
                    else:
                        answer = self.answers[key]
                    drop = False
                else:
                    number = len(self.entries) + 1
                    self.entries[key] = body
                    answer = (201, json.dumps({"id": f"JE-{number}", "key": key}).encode())
                    self.answers[key] = answer
                    drop = number in self.drop_response_of
        finally:
            with self.lock:
                self.in_flight.discard(key)
        if drop:  # stored, but the answer never reaches recon
            self.seen.append((key, 0))
            handler.close_connection = True
            handler.connection.shutdown(2)
            return None
        return self._reply(handler, answer[0], answer[1], key)
