"""A loopback HTTP proxy that breaks answers the way a network and a reverse proxy do, in front of
a real server (Tryton, or tests/fakes/key_ledger.py), so the outside ledgers' transport rule
(recon/ledger/wire.py) is tested on real sockets.

Each request is read whole, forwarded with `Connection: close`, and its whole answer read back;
then a fault planned for it is applied:
- `cut`: the status line, the headers and the first `cut_after` bytes of the body, then the
  connection closed: the client's read ends in `http.client.IncompleteRead`. The request landed.
- `reset`: the answer dropped and the connection reset (RST, SO_LINGER 0): the request landed,
  the client sees `ConnectionResetError`.
- `502`: the request is not forwarded; the proxy answers 502 Bad Gateway, as nginx does while
  the server behind it is away.
A fault applies to the next `times` requests whose body contains `when` (b"" matches all), or to
every matching request for `seconds` from the first one it hits (so a test can plan it before the
client starts talking). `seen` records (fault or "pass", the end of the request) for each request,
`first_fault_at` when a fault first hit (time.monotonic()).
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass, field

_GATEWAY_PAGE = b"<h1>502 Bad Gateway</h1>"
BAD_GATEWAY = (b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: "
               + str(len(_GATEWAY_PAGE)).encode() + b"\r\nConnection: close\r\n\r\n" + _GATEWAY_PAGE)


@dataclass
class Fault:
    kind: str  # "cut", "reset" or "502"
    when: bytes = b""
    times: int = 0  # > 0: this many matching requests
    seconds: float = 0.0  # > 0: every matching request for this long from the first one
    until: float = 0.0  # set at the first hit of a `seconds` fault
    cut_after: int = 20


@dataclass
class FaultyProxy:
    target_port: int
    faults: list[Fault] = field(default_factory=list)
    seen: list[tuple[str, bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0
    first_fault_at: float | None = None
    _listener: socket.socket | None = None

    def start(self) -> FaultyProxy:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def fail(self, kind: str, *, times: int = 0, seconds: float = 0.0, when: bytes = b"",
             cut_after: int = 20) -> None:
        """Plan a fault: for the next `times` matching requests, or for `seconds` from now."""
        with self.lock:
            self.faults.append(Fault(kind, when, times, seconds, 0.0, cut_after))

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.seen if k == kind)

    def _fault_for(self, body: bytes) -> Fault | None:
        with self.lock:
            now = time.monotonic()
            for fault in self.faults:
                if fault.when not in body:
                    continue
                if fault.times > 0:
                    fault.times -= 1
                elif fault.seconds and not fault.until:
                    fault.until = now + fault.seconds
                elif not fault.until > now:
                    continue
                if self.first_fault_at is None:
                    self.first_fault_at = now
                return fault
            return None

    def _accept(self) -> None:
        while self._listener is not None:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            request = _read_request(client)
            if request is None:
                return
            fault = self._fault_for(request)
            self.seen.append((fault.kind if fault else "pass", request[-120:]))
            if fault is not None and fault.kind == "502":
                client.sendall(BAD_GATEWAY)
                return
            answer = _forward(self.target_port, request)
            if fault is None:
                client.sendall(answer)
            elif fault.kind == "cut":
                head, _, body = answer.partition(b"\r\n\r\n")
                client.sendall(head + b"\r\n\r\n" + body[:fault.cut_after])
            elif fault.kind == "reset":
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        finally:
            client.close()


def _read_request(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    lines = []
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
        if name.strip().lower() != b"connection":
            lines.append(line)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        body += chunk
    return b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n" + body


def _forward(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as upstream:
        upstream.sendall(request)
        answer = b""
        while chunk := upstream.recv(65536):
            answer += chunk
    return answer
