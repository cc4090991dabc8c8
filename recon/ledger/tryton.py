"""Tryton as the outside ledger, over its plain JSON-RPC (`POST {url}/rpc/`, a session login).

Each adjustment is one `account.move` in the configured journal (`EXP` by default) and the period
of the night's business date, with two lines: the supplier payable (`AP`, with the supplier as its
party) and the purchase price variance (`PPV`). A positive amount is money the supplier owes back:
payable debited, variance credited; a negative one the other way round. recon's key is the move's
`description`, the one free text Tryton keeps on a move and lets you search: Tryton has no key of
its own, so recon looks the key up before posting, only while it holds the run's fence.

An undo cancels a move Tryton's way, with its `account.move.cancel` wizard (reversal: debit and
credit swapped, posted, reconciled), the cancelling move described `undo:{key}`.

What Tryton refuses (a closed period, an unknown account, no period for the date) becomes a
`LedgerRefused` carrying Tryton's own words; an unreachable or restarting Tryton is an OSError,
temporary, retried through the outage window.
"""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.error
import urllib.request
from datetime import date
from decimal import Decimal
from typing import Any

from recon.domain.money import BASE_CURRENCY, amount
from recon.ledger.port import Entry, Found, LedgerRefused, LedgerSettingsRefused

TIMEOUT_SECONDS = 30.0


class TrytonUnavailable(ConnectionError):
    """Tryton answered 5xx/429 or not at all: temporary."""

    outage_words = "Tryton unreachable"


def _encode(value: Any) -> Any:
    if isinstance(value, date):
        return {"__class__": "date", "year": value.year, "month": value.month, "day": value.day}
    if isinstance(value, Decimal):
        return {"__class__": "Decimal", "decimal": str(value)}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get("__class__") == "Decimal":
            return Decimal(value["decimal"])
        if value.get("__class__") == "date":
            return date(value["year"], value["month"], value["day"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _words(error: Any) -> str:
    """Tryton's error, as its user would read it: the message (and description) of a UserError."""
    if isinstance(error, list) and len(error) == 2 and isinstance(error[1], list | tuple):
        kind, args = error
        text = " ".join(str(a) for a in args[:2] if isinstance(a, str) and a)
        return f"{kind}: {text}" if text else str(kind)
    if isinstance(error, list) and error:
        return str(error[0])
    return str(error)


def _paise(amount: Decimal) -> int:
    return int((amount * 100).to_integral_value())


def _side(debit_paise: int) -> dict[str, Decimal]:
    """A signed amount as Tryton's debit and credit (both positive, one of them zero)."""
    amount = Decimal(abs(debit_paise)) / 100
    return {"debit": amount if debit_paise > 0 else Decimal(0),
            "credit": amount if debit_paise < 0 else Decimal(0)}


class TrytonLedger:
    name = "tryton"
    looks_up = True

    def __init__(self, url: str, user: str, password: str, *, payable: str, variance: str,
                 journal: str, taxes: dict[str, str] | None = None) -> None:
        self.url = url.rstrip("/") + "/rpc/"
        self.user, self.password = user, password
        self.codes = {"payable": payable, "variance": variance, "journal": journal}
        self.tax_codes = taxes or {}
        self._auth: str | None = None
        self._context: dict = {}
        self._ids: dict[str, int] = {}
        self._parties: dict[str, int] = {}
        self._periods: dict[date, int] = {}
        self._ready = asyncio.Lock()

    # ------------------------------------------------------------------ the wire
    def _send(self, method: str, params: list, auth: str | None) -> Any:
        body = json.dumps({"id": 1, "method": method, "params": _encode(params)}).encode()
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        if auth:
            request.add_header("Authorization", auth)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise PermissionError(f"Tryton refused the session ({exc.code})") from None
            if exc.code == 404:
                raise LedgerSettingsRefused(f"Tryton has no database at {self.url}") from None
            raise TrytonUnavailable(f"Tryton answered {exc.code} to {method}") from None
        except urllib.error.URLError as exc:
            raise TrytonUnavailable(f"Tryton at {self.url} unreachable: {exc.reason}") from None
        except (TimeoutError, ConnectionError) as exc:
            raise TrytonUnavailable(f"Tryton at {self.url}: {exc}") from None
        if "error" in answer and answer["error"]:
            raise LedgerRefused(f"Tryton refused {method}: {_words(answer['error'])}")
        return _decode(answer.get("result"))

    async def _call(self, method: str, *params: Any) -> Any:
        await self._prepare()
        try:
            return await asyncio.to_thread(self._send, method, [*params, self._context],
                                           self._auth)
        except PermissionError:  # the session expired or Tryton forgot it: log in again, once
            self._auth = None
            await self._login()
            return await asyncio.to_thread(self._send, method, [*params, self._context],
                                           self._auth)

    async def _login(self) -> None:
        answer = await asyncio.to_thread(
            self._send, "common.db.login", [self.user, {"password": self.password}, "en"], None)
        token = f"{self.user}:{answer[0]}:{answer[1]}"
        self._auth = "Session " + base64.b64encode(token.encode()).decode()

    async def _prepare(self) -> None:
        """Log in, read the user's context (its company) and the ids of the configured accounts
        and journal, once per worker."""
        async with self._ready:
            if self._auth and self._ids:
                return
            await self._login()
            self._context = await asyncio.to_thread(
                self._send, "model.res.user.get_preferences", [True, {}], self._auth)
            for what, model in (("payable", "account.account"), ("variance", "account.account"),
                                ("journal", "account.journal")):
                code = self.codes[what]
                found = await asyncio.to_thread(
                    self._send, f"model.{model}.search",
                    [[("code", "=", code)], 0, 2, None, self._context], self._auth)
                if len(found) != 1:
                    raise LedgerRefused(
                        f"Tryton has {'no' if not found else 'more than one'} {model} with code "
                        f"{code!r} (the {what} step 7 posts on)")
                self._ids[what] = found[0]

    # ------------------------------------------------------------------ master data
    async def _period(self, day: date) -> int:
        if day not in self._periods:
            found = await self._call("model.account.period.search", [
                ("start_date", "<=", day), ("end_date", ">=", day), ("type", "=", "standard"),
            ], 0, 1, None)
            if not found:
                raise LedgerRefused(f"Tryton has no period for {day.isoformat()} (create the "
                                    "fiscal year and its periods)")
            self._periods[day] = found[0]
        return self._periods[day]

    async def _tax_account(self, part: str) -> int:
        """The account a tax part goes on (RECON_LEDGER_TAX_ACCOUNTS), looked up once."""
        what = f"tax:{part}"
        if what not in self._ids:
            code = self.tax_codes.get(part)
            found = await self._call("model.account.account.search", [("code", "=", code)],
                                     0, 2, None) if code else []
            if len(found) != 1:
                raise LedgerRefused(
                    f"Tryton has no account for the {part.upper()} part of a claim (code "
                    f"{code!r}; RECON_LEDGER_TAX_ACCOUNTS names one per tax)")
            self._ids[what] = found[0]
        return self._ids[what]

    async def _party(self, supplier_id: str) -> int:
        if supplier_id not in self._parties:
            found = await self._call("model.party.party.search", [("name", "=", supplier_id)],
                                     0, 1, None)
            if not found:
                try:
                    found = await self._call("model.party.party.create", [{"name": supplier_id}])
                except LedgerRefused:  # another worker made it meanwhile: take that one
                    found = await self._call("model.party.party.search",
                                             [("name", "=", supplier_id)], 0, 1, None)
                    if not found:
                        raise
            self._parties[supplier_id] = found[0]
        return self._parties[supplier_id]

    # ------------------------------------------------------------------ the port
    async def find(self, keys: list[str]) -> dict[str, list[Found]]:
        """Every move described by one of `keys`, with what it does to the supplier payable. A
        draft move of ours (a crash between create and post) is posted here: it is the one."""
        answer: dict[str, list[Found]] = {k: [] for k in keys}
        if not keys:
            return answer
        await self._prepare()
        lines = await self._call("model.account.move.line.search_read", [
            ("move.description", "in", keys), ("account", "=", self._ids["payable"]),
        ], 0, None, None, ["move", "debit", "credit", "move.description", "move.state"])
        drafts = sorted({ln["move"] for ln in lines if ln["move."]["state"] == "draft"})
        if drafts:
            await self._call("model.account.move.post", drafts)
        by_move: dict[int, tuple[str, Decimal]] = {}
        for line in lines:
            key = line["move."]["description"]
            _, total = by_move.get(line["move"], (key, Decimal(0)))
            by_move[line["move"]] = (key, total + line["debit"] - line["credit"])
        for move_id, (key, total) in sorted(by_move.items()):
            answer[key].append(Found(key, str(move_id), _paise(total)))
        return answer

    async def post(self, entry: Entry) -> str:
        if entry.currency != BASE_CURRENCY:
            # The company books in ₹ (recon ledger init makes it so): a move line's debit and
            # credit are in its currency, and recon assumes no rate. Refused, never converted.
            raise LedgerRefused(
                f"{entry.key} is {amount(entry.amount_paise, entry.currency)}: the Tryton company "
                f"books in ₹ and recon assumes no exchange rate; post it by hand at the rate of "
                f"the day")
        await self._prepare()
        party = await self._party(entry.supplier_id)
        period = await self._period(entry.business_date)
        # The payable takes the whole claim; the variance its taxable value and each tax part
        # its own account (the input tax the claim takes back), all on the other side.
        lines = [{"account": self._ids["payable"], "party": party, **_side(entry.amount_paise)}]
        taxable = entry.amount_paise if entry.taxable_paise is None else entry.taxable_paise
        lines.append({"account": self._ids["variance"], **_side(-taxable)})
        for part, paise in entry.taxes:
            lines.append({"account": await self._tax_account(part), **_side(-paise)})
        created = await self._call("model.account.move.create", [{
            "journal": self._ids["journal"], "period": period, "date": entry.business_date,
            "description": entry.key, "lines": [["create", lines]],
        }])
        await self._call("model.account.move.post", created)
        return str(created[0])

    async def cancel(self, entry: Entry, original_id: str) -> str:
        await self._prepare()
        move = int(original_id)
        context = {**self._context, "active_model": "account.move", "active_id": move,
                   "active_ids": [move]}
        wizard = "wizard.account.move.cancel"
        session, _, _ = await asyncio.to_thread(self._send, f"{wizard}.create", [self._context],
                                                self._auth)
        try:
            await asyncio.to_thread(self._send, f"{wizard}.execute",
                                    [session, {}, "default", context], self._auth)
            await asyncio.to_thread(self._send, f"{wizard}.execute", [
                session, {"default": {"description": entry.key, "reversal": True}}, "cancel",
                context], self._auth)
        finally:
            await asyncio.to_thread(self._send, f"{wizard}.delete", [session, self._context],
                                    self._auth)
        found = (await self.find([entry.key]))[entry.key]
        if not found:
            raise LedgerRefused(f"Tryton's cancel wizard made no move for {entry.key}")
        return found[0].outside_id

    async def close(self) -> None:
        return None
