"""The codec server: the Web UI (or `temporal --codec-endpoint`) asks it to open payloads for the
people allowed to read them; the cluster itself never holds a key.

Temporal's remote codec protocol: `POST /decode` and `POST /encode` with a JSON body
`{"payloads": [...]}` (each payload as protobuf JSON: base64 `metadata` values and `data`), the
namespace in `X-Namespace`; the answer has the same shape. Rules kept here:

- every request carries the token: `Authorization: Bearer TOKEN` (the CLI, scripts, a Web UI
  that passes its access token), or the endpoint path `/TOKEN/decode` for a Web UI that can send
  no header (the dev server's `--ui-codec-endpoint`); compared in constant time;
- CORS only for the configured origins (the Web UI's); a request from any other origin is
  refused, and the browser's OPTIONS preflight is answered for allowed origins only;
- bound to 127.0.0.1 unless told otherwise; bodies above 8 MB are refused (a payload is at most
  2 MB). The standard library's threaded HTTP server: no new dependency for one small endpoint.
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from recon.domain.errors import PayloadUnreadable, UnknownPayloadKey
from recon.domain.settings_table import default_of
from recon.runtime.codec import PayloadCipher
from recon.runtime.keyring import Keyring

MAX_BODY = 8 * 1024 * 1024
ALLOWED_HEADERS = "Content-Type, Authorization, X-Namespace"


@dataclass
class CodecService:
    """What the handler needs: the keyring, the token, the UI origins, the default namespace."""

    keyring: Keyring
    token: str
    origins: frozenset[str]
    namespace: str = default_of("TEMPORAL_NAMESPACE")
    _ciphers: dict[str, PayloadCipher] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cipher(self, namespace: str) -> PayloadCipher:
        with self._lock:
            if namespace not in self._ciphers:
                self._ciphers[namespace] = PayloadCipher(self.keyring, namespace)
            return self._ciphers[namespace]

    def authorized(self, header: str | None, path_token: str | None) -> bool:
        offered = path_token
        if header and header.startswith("Bearer "):
            offered = header.removeprefix("Bearer ").strip()
        return offered is not None and hmac.compare_digest(offered.encode(), self.token.encode())

    def transform(self, action: str, body: bytes, namespace: str) -> bytes:
        payloads = json_format.Parse(body, Payloads())
        cipher = self.cipher(namespace)
        done = cipher.open_all(payloads.payloads) if action == "decode" \
            else cipher.seal_all(payloads.payloads)
        return json_format.MessageToJson(Payloads(payloads=done), indent=None).encode()


def _split(path: str) -> tuple[str | None, str | None]:
    """'/decode' -> (None, 'decode'); '/TOKEN/decode' -> ('TOKEN', 'decode'); else (None, None)."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if len(parts) == 1 and parts[0] in ("encode", "decode"):
        return None, parts[0]
    if len(parts) == 2 and parts[1] in ("encode", "decode") and parts[0]:
        return parts[0], parts[1]
    return None, None


class CodecHandler(BaseHTTPRequestHandler):
    service: CodecService  # set on the subclass `serve` makes
    server_version = "recon-codec"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        """Silent: a path can hold the token, and lines per request would be noise."""

    def _origin_allowed(self) -> bool | None:
        origin = self.headers.get("Origin")
        if origin is None:
            return None  # not a browser: no CORS to answer
        return origin in self.service.origins

    def _reply(self, status: HTTPStatus, body: bytes = b"", cors: bool = False,
               content_type: str = "application/json") -> None:
        self.send_response(status)
        if cors:
            self.send_header("Access-Control-Allow-Origin", self.headers["Origin"])
            self.send_header("Access-Control-Allow-Credentials", "true")
            self.send_header("Vary", "Origin")
        if body:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: HTTPStatus, message: str, cors: bool = False) -> None:
        self._reply(status, json.dumps({"error": message}).encode(), cors)

    def do_OPTIONS(self) -> None:  # noqa: N802 - the stdlib's naming
        allowed = self._origin_allowed()
        if not allowed or _split(self.path)[1] is None:
            self._error(HTTPStatus.FORBIDDEN, "origin not allowed")
            return
        self.send_response(HTTPStatus.NO_CONTENT)
        self.send_header("Access-Control-Allow-Origin", self.headers["Origin"])
        self.send_header("Access-Control-Allow-Credentials", "true")
        self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
        self.send_header("Access-Control-Allow-Headers", ALLOWED_HEADERS)
        self.send_header("Access-Control-Max-Age", "600")
        self.send_header("Vary", "Origin")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        allowed = self._origin_allowed()
        if allowed is False:
            self._error(HTTPStatus.FORBIDDEN, "origin not allowed")
            return
        cors = bool(allowed)
        path_token, action = _split(self.path)
        if action is None:
            self._error(HTTPStatus.NOT_FOUND, "POST /encode or /decode", cors)
            return
        if not self.service.authorized(self.headers.get("Authorization"), path_token):
            self._error(HTTPStatus.UNAUTHORIZED, "a valid codec token is required", cors)
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._error(HTTPStatus.LENGTH_REQUIRED, "Content-Length required", cors)
            return
        if length < 0 or length > MAX_BODY:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"at most {MAX_BODY} bytes", cors)
            return
        body = self.rfile.read(length)
        namespace = self.headers.get("X-Namespace") or self.service.namespace
        try:
            answer = self.service.transform(action, body, namespace)
        except (json_format.ParseError, UnicodeDecodeError, ValueError, UnknownPayloadKey) as exc:
            status = HTTPStatus.UNPROCESSABLE_ENTITY if isinstance(
                exc, UnknownPayloadKey | PayloadUnreadable) else HTTPStatus.BAD_REQUEST
            self._error(status, str(exc).splitlines()[0] if str(exc) else "bad request", cors)
            return
        self._reply(HTTPStatus.OK, answer, cors)


def serve(service: CodecService, host: str = default_of("RECON_CODEC_HOST"),
          port: int = 0) -> ThreadingHTTPServer:
    """Bound and listening; the caller runs `serve_forever` (a thread) and `shutdown`s it."""
    handler = type("BoundCodecHandler", (CodecHandler,), {"service": service})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


@dataclass
class CodecServerThread:
    """The codec server in a background thread of this process (`recon dev`, tests)."""

    service: CodecService
    host: str = default_of("RECON_CODEC_HOST")
    port: int = 0
    server: ThreadingHTTPServer | None = None

    def start(self) -> CodecServerThread:
        self.server = serve(self.service, self.host, self.port)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         name="codec-server", daemon=True).start()
        return self

    def url(self, with_token: bool = False) -> str:
        base = f"http://{self.host}:{self.port}"
        return f"{base}/{self.service.token}" if with_token else base

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


def origins_from(text: str | None, default: Iterable[str] = ()) -> frozenset[str]:
    """Comma-separated origins (`http://localhost:8233`); a trailing slash is dropped."""
    given = [o.strip().rstrip("/") for o in (text or "").split(",") if o.strip()]
    return frozenset(given or default)
