"""A loopback OpenAI that also speaks the Batch API: files, batches, and chat completions.

The same scripted model as `ScriptedOpenAI` (tests/fakes/openai_server.py) answers both ways, so a
night that falls back from its batch to interactive requests is answered by one server, which
counts every request it bills: a batch line answered (200) once, when the batch answers it, and an
interactive 200 as before. `billed()` and `answered_twice()` span both.

Protocol (what the `openai` SDK calls): `POST /v1/files` (multipart, `purpose=batch`),
`GET /v1/files` (list, paged by `after`), `GET /v1/files/{id}/content`, `POST /v1/batches`,
`GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`, `GET /v1/batches?after=&limit=` (newest
first, paged, metadata returned, no filter: a client finds its batch by scanning).

Behaviour, set on the instance before the batch is created:
- `completion_delay`: seconds from create to the last line answered; lines are answered evenly over
  that time (the batch's `request_counts.completed` grows), then the batch is `completed`;
- `answer_only`: answer only this many lines (in input order), then stay `in_progress` for ever
  (a batch that will not finish before the deadline);
- `expire_after`: seconds after create: `expired`, answered lines in the output file, the rest in
  the error file with code `batch_expired`;
- `fail_next`: the next batch `failed` at validation (no line answered);
- `cancel_takes`: seconds a cancel stays `cancelling` before `cancelled`;
- `cut_create_replies`: that many next creates make the batch and then cut the connection without
  a reply (the client cannot know whether its create landed);
- `create_lands_after`: the next create is made only after that many seconds (a client with a
  shorter timeout has given up by then: its create lands after it stopped waiting);
- `outage_after_create`: the next create makes the batch, then the whole batch interface
  answers 503 for that many seconds (that create's reply included): a provider outage at the
  worst moment;
- `hold_create_reply`: the next create makes the batch, then holds its reply that many seconds
  (a worker killed in that moment dies during its create: the batch exists, its id unknown);
- `outage_cuts`: during an outage (`down_until`, `outage_after_create`) every other request has its
  connection closed without a reply instead of a 503 (a provider unreachable, not just failing);
- `looks`: how many times a batch was looked at (`GET /v1/batches/{id}`), `last_look` when;
- per-line errors: `script(invoice_no, "500")` (the scripted steps of `ScriptedOpenAI`): a line
  whose step is a status is written to the error file with that status.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import math
import secrets
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from recon.domain.keys import number_of
from tests.fakes.openai_server import (
    API_KEY,
    ScriptedOpenAI,
    _error,
    _Server,
    _tokens,
    document_of,
    invoice_of,
    model_answer,
)


@dataclass
class StoredFile:
    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int

    def as_json(self) -> dict:
        return {"id": self.id, "object": "file", "bytes": len(self.content),
                "created_at": self.created_at, "filename": self.filename, "purpose": self.purpose,
                "status": "processed", "status_details": None}


@dataclass
class FakeBatch:
    id: str
    input_file_id: str
    endpoint: str
    metadata: dict[str, str]
    lines: list[dict]
    created: float  # time.time()
    completion_delay: float
    answer_only: int | None
    expire_after: float | None
    cancel_takes: float
    status: str = "in_progress"
    failed_validation: bool = False
    cancel_asked: float | None = None
    ended: float | None = None
    answers: dict[str, tuple[int, dict]] = field(default_factory=dict)  # custom_id -> (status, body)
    output_file_id: str | None = None
    error_file_id: str | None = None


class BatchOpenAI(ScriptedOpenAI):
    def __init__(self, completion_delay: float = 0.5, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._lock = threading.RLock()  # a batch answers its lines under it (and asks the script)
        self._server.server_close()
        self._server = _BatchServer(self)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="batch-openai", daemon=True)
        self.completion_delay = completion_delay
        self.answer_only: int | None = None
        self.expire_after: float | None = None
        self.fail_next = False
        self.cancel_takes = 0.0
        self.cut_create_replies = 0
        self.outage_after_create = 0.0
        self.create_lands_after = 0.0
        self.down_until = 0.0  # the batch interface answers 503 until then
        self.outage_cuts = False  # ... or, every other request, closes the connection unanswered
        self.hold_create_reply = 0.0
        self.looks = 0
        self.last_look = 0.0
        self.refused = 0  # requests refused by an outage (503 or cut)
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.creates = 0  # POST /v1/batches received (cut or not)
        self.lists = 0  # GET /v1/batches (list) received
        self.batch_billed: Counter[str] = Counter()  # custom_id -> lines answered (200) in batches
        self.batch_tokens = [0, 0]  # prompt, completion of the billed batch lines
        self._file_ids = itertools.count(1)
        self._batch_ids = itertools.count(1)
        self._prefix = secrets.token_hex(4)  # ids unique across servers, as the provider's are

    # ------------------------------------------------------------------ what happened
    def billed(self) -> Counter[str]:
        """Requests billed per invoice number: batch lines answered and interactive 200s."""
        counts = Counter({number_of(k): n for k, n in self.batch_billed.items()})
        counts.update(r.invoice_no for r in self.snapshot()
                      if r.status == 200 and r.step != "timeout")
        return counts

    def answered_twice(self) -> list[str]:
        return [inv for inv, n in self.billed().items() if n > 1]

    def interactive(self) -> list[str]:
        return [r.invoice_no for r in self.snapshot()]

    # ------------------------------------------------------------------ files
    def upload(self, filename: str, purpose: str, content: bytes) -> dict:
        with self._lock:
            stored = StoredFile(f"file-{self._prefix}{next(self._file_ids):06d}", filename, purpose, content,
                                int(time.time()))
            self.files[stored.id] = stored
        return stored.as_json()

    def _write_file(self, filename: str, lines: list[dict]) -> str | None:
        if not lines:
            return None
        content = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return self.upload(filename, "batch_output", content)["id"]

    # ------------------------------------------------------------------ batches
    def create(self, body: dict) -> tuple[int, dict]:
        source = self.files.get(body.get("input_file_id", ""))
        if source is None:
            return 400, _error("input_file_id not found", "invalid_request_error")
        if body.get("completion_window") != "24h":
            return 400, _error("completion_window must be 24h", "invalid_request_error")
        lines = [json.loads(raw) for raw in source.content.decode().splitlines() if raw.strip()]
        with self._lock:
            self.creates += 1
            batch = FakeBatch(
                id=f"batch_{self._prefix}{next(self._batch_ids):06d}", input_file_id=source.id,
                endpoint=body["endpoint"], metadata=dict(body.get("metadata") or {}), lines=lines,
                created=time.time(), completion_delay=self.completion_delay,
                answer_only=self.answer_only, expire_after=self.expire_after,
                cancel_takes=self.cancel_takes, failed_validation=self.fail_next)
            self.fail_next = False
            self.batches[batch.id] = batch
        return 200, self.view(batch)

    def _answer_line(self, batch: FakeBatch, line: dict) -> None:
        """Answer one line, once: the model's answer (or the scripted status), billed if 200."""
        user = next(m["content"] for m in line["body"]["messages"] if m["role"] == "user")
        step = self._next_step(invoice_of(document_of(user)))
        if step[:1].isdigit():
            status = int(step.partition(":")[0])
            batch.answers[line["custom_id"]] = (status, json.loads(_error(f"scripted {status}",
                                                                          "server_error")))
            return
        content = model_answer(user)
        prompt = "".join(m["content"] for m in line["body"]["messages"])
        pt, ct = _tokens(prompt), _tokens(content)
        self.batch_billed[line["custom_id"]] += 1
        self.batch_tokens[0] += pt
        self.batch_tokens[1] += ct
        batch.answers[line["custom_id"]] = (200, {
            "id": f"chatcmpl-{batch.id}-{line['custom_id']}", "object": "chat.completion",
            "created": int(time.time()), "model": line["body"]["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": content, "refusal": None,
                                     "annotations": []}}],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}})

    def _advance(self, batch: FakeBatch, now: float) -> None:
        """Bring a batch up to `now` (called under the lock on every look at it)."""
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return
        if batch.failed_validation:
            batch.status, batch.ended = "failed", now
            return
        answering_until = now if batch.cancel_asked is None else batch.cancel_asked
        if batch.expire_after is not None:
            answering_until = min(answering_until, batch.created + batch.expire_after)
        elapsed = answering_until - batch.created
        share = 1.0 if batch.completion_delay <= 0 else min(1.0, elapsed / batch.completion_delay)
        due = math.floor(len(batch.lines) * share)
        if batch.answer_only is not None:
            due = min(due, batch.answer_only)
        for line in batch.lines[len(batch.answers):due]:
            self._answer_line(batch, line)
        if len(batch.answers) == len(batch.lines):
            self._finish(batch, "completed", now)
        elif batch.cancel_asked is not None:
            batch.status = "cancelling"
            if now >= batch.cancel_asked + batch.cancel_takes:
                self._finish(batch, "cancelled", now)
        elif batch.expire_after is not None and now >= batch.created + batch.expire_after:
            self._finish(batch, "expired", now)

    def _finish(self, batch: FakeBatch, status: str, now: float) -> None:
        out, errors = [], []
        for custom_id, (code, body) in batch.answers.items():
            row = {"id": f"batch_req_{batch.id}_{custom_id}", "custom_id": custom_id,
                   "response": {"status_code": code, "request_id": f"req_{custom_id}",
                                "body": body}, "error": None}
            (out if code == 200 else errors).append(row)
        if status == "expired":
            errors += [{"id": f"batch_req_{batch.id}_{line['custom_id']}",
                        "custom_id": line["custom_id"], "response": None,
                        "error": {"code": "batch_expired",
                                  "message": "This request could not be executed before the "
                                             "completion window expired."}}
                       for line in batch.lines if line["custom_id"] not in batch.answers]
        batch.output_file_id = self._write_file(f"{batch.id}_output.jsonl", out)
        batch.error_file_id = self._write_file(f"{batch.id}_error.jsonl", errors)
        batch.status, batch.ended = status, now

    def view(self, batch: FakeBatch) -> dict:
        failed = sum(1 for code, _ in batch.answers.values() if code != 200)
        done = batch.status in ("completed", "failed", "expired", "cancelled")
        at = int(batch.ended) if done and batch.ended else None
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.endpoint,
            "errors": ({"object": "list", "data": [{"code": "invalid_file", "message":
                        "scripted validation failure", "param": None, "line": None}]}
                       if batch.status == "failed" else None),
            "input_file_id": batch.input_file_id, "completion_window": "24h",
            "status": batch.status, "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id, "created_at": int(batch.created),
            "in_progress_at": int(batch.created), "expires_at": int(batch.created) + 86400,
            "finalizing_at": at if batch.status == "completed" else None,
            "completed_at": at if batch.status == "completed" else None,
            "failed_at": at if batch.status == "failed" else None,
            "expired_at": at if batch.status == "expired" else None,
            "cancelling_at": int(batch.cancel_asked) if batch.cancel_asked else None,
            "cancelled_at": at if batch.status == "cancelled" else None,
            "request_counts": {"total": len(batch.lines),
                               "completed": len(batch.answers) - failed, "failed": failed},
            "metadata": batch.metadata,
        }

    def look(self, batch_id: str) -> dict | None:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return None
            self._advance(batch, time.time())
            return self.view(batch)

    def cancel(self, batch_id: str) -> dict | None:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return None
            now = time.time()
            self._advance(batch, now)
            if batch.status in ("validating", "in_progress", "finalizing"):
                batch.cancel_asked = now
                self._advance(batch, now)
            return self.view(batch)

    def page(self, items: list[dict], query: dict[str, list[str]]) -> dict:
        """One page of a newest-first list, as the API pages it (`after` an id, `limit`)."""
        limit = int(query.get("limit", ["20"])[0])
        after = query.get("after", [None])[0]
        if after is not None:
            ids = [item["id"] for item in items]
            items = items[ids.index(after) + 1:] if after in ids else []
        data = items[:limit]
        return {"object": "list", "data": data, "has_more": len(items) > limit,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None}

    def list_batches(self, query: dict[str, list[str]]) -> dict:
        with self._lock:
            self.lists += 1
            now = time.time()
            newest_first = sorted(self.batches.values(), key=lambda b: (b.created, b.id),
                                  reverse=True)
            for batch in newest_first:
                self._advance(batch, now)
            items = [self.view(b) for b in newest_first]
        return self.page(items, query)

    def list_files(self, query: dict[str, list[str]]) -> dict:
        purpose = query.get("purpose", [None])[0]
        with self._lock:
            items = [f.as_json() for f in sorted(self.files.values(),
                                                 key=lambda f: f.id, reverse=True)
                     if purpose is None or f.purpose == purpose]
        return self.page(items, query)


class _BatchHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _BatchServer

    def _reply(self, status: int, payload: dict | bytes, kind: str = "application/json") -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {API_KEY}":
            return True
        self._reply(401, _error("Incorrect API key provided.", "invalid_api_key"))
        return False

    def _down(self) -> bool:
        fake = self.server.fake
        if time.time() < fake.down_until:
            with fake._lock:
                fake.refused += 1
                cut = fake.outage_cuts and fake.refused % 2 == 0
            if cut:
                self._cut()
            else:
                self._reply(503, _error("The server is overloaded or not ready yet.",
                                        "server_error"))
            return True
        return False

    def _cut(self) -> None:
        """Close the connection without a reply (the request may or may not have done its work)."""
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        fake = self.server.fake
        path = urlsplit(self.path).path
        raw = self._body()
        if path == "/v1/chat/completions":
            seen, status, headers, payload = fake.respond(
                json.loads(raw or b"{}"), self.headers.get("Authorization"),
                self.headers.get("OpenAI-Project") or "")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                return
            seen.answered = time.time()
            return
        if not self._authorized() or self._down():
            return
        if path == "/v1/files":
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw)
            fields = {part.get_param("name", header="content-disposition"): part
                      for part in message.iter_parts()}
            upload = fields.get("file")
            purpose = fields.get("purpose")
            if upload is None or purpose is None:
                self._reply(400, _error("file and purpose are required", "invalid_request_error"))
                return
            self._reply(200, fake.upload(upload.get_filename() or "upload.jsonl",
                                         purpose.get_content().strip(),
                                         upload.get_payload(decode=True)))
            return
        if path == "/v1/batches":
            with fake._lock:
                late, fake.create_lands_after = fake.create_lands_after, 0.0
            time.sleep(late)
            status, answer = fake.create(json.loads(raw or b"{}"))
            with fake._lock:
                cut = status == 200 and fake.cut_create_replies > 0
                if cut:
                    fake.cut_create_replies -= 1
                if status == 200 and fake.outage_after_create:
                    fake.down_until = time.time() + fake.outage_after_create
                    fake.outage_after_create = 0.0
                hold, fake.hold_create_reply = (fake.hold_create_reply if status == 200 else 0.0,
                                                0.0 if status == 200 else fake.hold_create_reply)
            time.sleep(hold)
            if self._down():
                return
            if cut:  # the batch is made; the reply never arrives
                self._cut()
                return
            self._reply(status, answer)
            return
        if path.startswith("/v1/batches/") and path.endswith("/cancel"):
            view = fake.cancel(path.split("/")[3])
            self._reply(200 if view else 404, view or _error("No batch found", "not_found"))
            return
        self._reply(404, _error(f"Unknown request URL: POST {path}", "invalid_request_error"))

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        fake = self.server.fake
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        path = parts.path
        if path == "/received":
            payload = json.dumps([r.__dict__ for r in fake.snapshot()]).encode()
            self._reply(200, payload)
            return
        if not self._authorized() or self._down():
            return
        if path == "/v1/files":
            self._reply(200, fake.list_files(query))
        elif path.startswith("/v1/files/") and path.endswith("/content"):
            stored = fake.files.get(path.split("/")[3])
            if stored is None:
                self._reply(404, _error("No such File object", "not_found"))
            else:
                self._reply(200, stored.content, "application/octet-stream")
        elif path.startswith("/v1/files/"):
            stored = fake.files.get(path.split("/")[3])
            self._reply(200 if stored else 404,
                        stored.as_json() if stored else _error("No such File", "not_found"))
        elif path == "/v1/batches":
            self._reply(200, fake.list_batches(query))
        elif path.startswith("/v1/batches/"):
            view = fake.look(path.split("/")[3])
            with fake._lock:
                fake.looks += 1
                fake.last_look = time.time()
            self._reply(200 if view else 404, view or _error("No batch found", "not_found"))
        else:
            self._reply(404, _error(f"Unknown request URL: GET {path}", "invalid_request_error"))

    def log_message(self, format: str, *args: object) -> None:
        pass


class _BatchServer(_Server):
    def __init__(self, fake: BatchOpenAI, port: int = 0) -> None:
        super(_Server, self).__init__(("127.0.0.1", port), _BatchHandler)
        self.fake = fake  # type: ignore[assignment]
