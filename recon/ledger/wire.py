"""One HTTP exchange with an outside ledger, and the one rule for when its transport failed.

Both outside ledgers (Tryton's JSON-RPC, the key-enforcing API) speak HTTP through here, so what
counts as "the answer never arrived whole" is decided once: a refused or reset connection, a
timeout, a body cut mid-response (`http.client.IncompleteRead`), a connection closed before the
status line (`RemoteDisconnected`), a garbled status line (`BadStatusLine`), and a 5xx or 429
(a restarting ledger, or the proxy in front of it answering 502/503/504 while it is away). Each is
`LedgerUnavailable`, a `ConnectionError`: temporary for `recon.domain.errors.classify`, retried
under the same key through the outage window. Retrying is safe because an entry is sent under its
key: Tryton's look-up finds a move that landed before the cut, a key-enforcing ledger answers the
repeat with its first answer.
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request

# Anything the transport raises: URLError, ConnectionError and TimeoutError are OSErrors; a cut
# body or a bad status line is an HTTPException, which is not.
TRANSPORT_FAILURES: tuple[type[BaseException], ...] = (OSError, http.client.HTTPException)


class LedgerUnavailable(ConnectionError):
    """No whole answer from the outside ledger (or a 5xx/429 in place of one): temporary."""

    outage_words = "the outside ledger unreachable"


def answers_later(status: int) -> bool:
    """A status that means "not now" rather than "no": the ledger (or its proxy) is busy or away."""
    return status == 429 or status >= 500


def exchange(request: urllib.request.Request, timeout: float, who: str,
             unavailable: type[LedgerUnavailable] = LedgerUnavailable) -> tuple[int, bytes]:
    """Send `request`; return the status and the whole body of a final answer below 500 (a 4xx
    too: what it means is the ledger's to say). Raises `unavailable` for every transport failure
    and every 5xx/429, naming `who` and what went wrong."""
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        if answers_later(exc.code):
            raise unavailable(f"{who} answered {exc.code}") from None
        try:
            return exc.code, exc.read()
        except TRANSPORT_FAILURES as cut:
            raise unavailable(f"{who} answered {exc.code}, then the connection failed: "
                              f"{_words(cut)}") from None
    except urllib.error.URLError as exc:
        raise unavailable(f"{who} unreachable: {exc.reason}") from None
    except TRANSPORT_FAILURES as exc:
        raise unavailable(f"{who}: {_words(exc)}") from None


def _words(exc: BaseException) -> str:
    if isinstance(exc, http.client.IncompleteRead):
        return f"the answer was cut after {len(exc.partial)} bytes (IncompleteRead)"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
