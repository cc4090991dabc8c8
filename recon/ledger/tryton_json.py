"""Tryton's JSON-RPC as recon reads and writes it: one call (`send`), its encoding of dates and
decimals, the words of its errors, and amounts as a move line's debit and credit
(recon/ledger/tryton.py)."""

from __future__ import annotations

import json
import urllib.request
from datetime import date
from decimal import Decimal
from typing import Any

from recon.ledger.port import LedgerRefused, LedgerSettingsRefused
from recon.ledger.wire import LedgerUnavailable, exchange

TIMEOUT_SECONDS = 30.0


class TrytonUnavailable(LedgerUnavailable):
    """Tryton answered 5xx/429 or no whole answer at all: temporary (recon/ledger/wire.py)."""

    outage_words = "Tryton unreachable"


def encode(value: Any) -> Any:
    if isinstance(value, date):
        return {"__class__": "date", "year": value.year, "month": value.month, "day": value.day}
    if isinstance(value, Decimal):
        return {"__class__": "Decimal", "decimal": str(value)}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get("__class__") == "Decimal":
            return Decimal(value["decimal"])
        if value.get("__class__") == "date":
            return date(value["year"], value["month"], value["day"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def words(error: Any) -> str:
    """Tryton's error, as its user would read it: the message (and description) of a UserError."""
    if isinstance(error, list) and len(error) == 2 and isinstance(error[1], list | tuple):
        kind, args = error
        text = " ".join(str(a) for a in args[:2] if isinstance(a, str) and a)
        return f"{kind}: {text}" if text else str(kind)
    if isinstance(error, list) and error:
        return str(error[0])
    return str(error)


def paise(amount: Decimal) -> int:
    return int((amount * 100).to_integral_value())


def side(debit_paise: int) -> dict[str, Decimal]:
    """A signed amount as Tryton's debit and credit (both positive, one of them zero)."""
    amount = Decimal(abs(debit_paise)) / 100
    return {"debit": amount if debit_paise > 0 else Decimal(0),
            "credit": amount if debit_paise < 0 else Decimal(0)}


def send(url: str, method: str, params: list, auth: str | None) -> Any:
    """One JSON-RPC call to `url` (`.../rpc/`): its result, or the error as recon names it."""
    body = json.dumps({"id": 1, "method": method, "params": encode(params)}).encode()
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    if auth:
        request.add_header("Authorization", auth)
    status, raw = exchange(request, TIMEOUT_SECONDS, f"Tryton at {url} ({method})",
                           TrytonUnavailable)
    if status in (401, 403):
        raise PermissionError(f"Tryton refused the session ({status})")
    if status == 404:
        raise LedgerSettingsRefused(f"Tryton has no database at {url}")
    try:
        answer = json.loads(raw)
    except ValueError:
        raise LedgerRefused(f"Tryton answered {method} ({status}) with no JSON-RPC: "
                            f"{raw[:200].decode(errors='replace')}") from None
    if isinstance(answer, dict) and answer.get("error"):
        raise LedgerRefused(f"Tryton refused {method}: {words(answer['error'])}")
    if status >= 400 or not isinstance(answer, dict):
        raise LedgerRefused(f"Tryton answered {method} with {status}: {str(answer)[:200]}")
    return decode(answer.get("result"))
