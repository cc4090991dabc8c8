"""An outside ledger that enforces a key (the IETF Idempotency-Key draft, Xero, Zuora, Stripe;
QuickBooks Online's `requestid`): every entry is POSTed to `{url}/entries` with its recon key as
the `Idempotency-Key` header and as `?requestid=` (QuickBooks' limit is 50 characters, so a longer
key is sent there as its SHA-256 prefix).

The ledger does the checking, so recon posts without looking up first: a repeat of the same key
and body is answered with the first response (the id recon keeps), which also makes a re-post the
closing check. 422 (the key came with another body) is a bug and hands over with both bodies;
409 (a request with that key is still in flight) is temporary and retried; another 4xx is the
ledger refusing the entry, in its words; 5xx, 429 or no whole answer (a reset, a cut body, a
proxy's 502) is temporary (recon/ledger/wire.py says why, once for both ledgers).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import urllib.parse
import urllib.request

from recon.ledger.port import Entry, Found, LedgerDisagrees, LedgerRefused
from recon.ledger.wire import LedgerUnavailable, exchange

TIMEOUT_SECONDS = 30.0
REQUESTID_MAX = 50


class LedgerBusy(LedgerUnavailable):
    """409: the ledger is still working on a request with this key; try again soon."""

    outage_words = "the ledger busy with the same key (409)"


def request_id(key: str) -> str:
    return key if len(key) <= REQUESTID_MAX else hashlib.sha256(key.encode()).hexdigest()[:REQUESTID_MAX]


def body_of(entry: Entry, original_id: str | None = None) -> dict:
    body = {
        "key": entry.key, "amount_minor": entry.amount_paise, "currency": entry.currency,
        "supplier": entry.supplier_id, "invoice": entry.invoice_no, "line": entry.line_no,
        "memo": entry.memo, "date": entry.business_date.isoformat(),
    }
    if entry.reverses:
        body.update(reverses=entry.reverses, reverses_id=original_id)
    return body


class KeyedHttpLedger:
    name = "http"
    looks_up = False

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url.rstrip("/") + "/entries"
        self.token = token

    def _send(self, key: str, body: dict) -> str:
        raw = json.dumps(body, sort_keys=True).encode()
        url = f"{self.url}?{urllib.parse.urlencode({'requestid': request_id(key)})}"
        request = urllib.request.Request(url, data=raw, method="POST", headers={
            "Content-Type": "application/json", "Idempotency-Key": key})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        status, raw_answer = exchange(request, TIMEOUT_SECONDS, f"the ledger at {self.url} (key {key})",
                                      LedgerUnavailable)
        words = raw_answer.decode(errors="replace").strip()[:500]
        if status == 422:
            raise LedgerDisagrees(
                f"the ledger answered 422 to key {key}: it holds that key with another body "
                f"(a bug, not a duplicate). recon sent {raw.decode()}; the ledger said: "
                f"{words}")
        if status == 409:
            raise LedgerBusy(f"the ledger answered 409 to key {key}: a request with it is "
                             "still in flight")
        if status >= 400:
            raise LedgerRefused(f"the ledger refused key {key} ({status}): {words}")
        try:
            answer = json.loads(raw_answer or b"{}")
        except ValueError:
            raise LedgerRefused(f"the ledger answered key {key} with no JSON: {words}") from None
        outside_id = answer.get("id")
        if outside_id is None:
            raise LedgerRefused(f"the ledger answered key {key} without an id: {answer}")
        return str(outside_id)

    async def find(self, keys: list[str]) -> dict[str, list[Found]]:
        raise NotImplementedError("a key-enforcing ledger is not looked up: repeats are harmless")

    async def post(self, entry: Entry) -> str:
        return await asyncio.to_thread(self._send, entry.key, body_of(entry))

    async def cancel(self, entry: Entry, original_id: str) -> str:
        return await asyncio.to_thread(self._send, entry.key, body_of(entry, original_id))

    async def close(self) -> None:
        return None
