"""Tryton as the outside ledger, over its plain JSON-RPC (`POST {url}/rpc/`, a session login).

Each adjustment is one `account.move` in the configured journal (`EXP` by default) and the period
of the night's business date, with two lines: the supplier payable (`AP`, its party the one the
accountant keeps for the supplier, found by RECON_LEDGER_PARTY_BY: `_party`) and the purchase
price variance (`PPV`). A positive amount is money the supplier owes back:
payable debited, variance credited; a negative one the other way round. recon's key is the move's
`description`, the one free text Tryton keeps on a move and lets you search: Tryton has no key of
its own, so recon looks the key up before posting, only while it holds the run's fence.

An undo cancels a move Tryton's way, with its `account.move.cancel` wizard (reversal: debit and
credit swapped, posted, reconciled), the cancelling move described `undo:{key}`.

What Tryton refuses (a closed period, an unknown account, no period for the date) becomes a
`LedgerRefused` carrying Tryton's own words; an unreachable or restarting Tryton, a reset
connection, an answer cut mid-body or a proxy's 502 is `TrytonUnavailable` (recon/ledger/wire.py),
temporary, retried through the outage window under the same key.
"""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.request
from datetime import date
from decimal import Decimal
from typing import Any

from recon.domain.money import BASE_CURRENCY, amount
from recon.domain.settings_table import default_of
from recon.ledger.port import Entry, Found, LedgerDisagrees, LedgerRefused, LedgerSettingsRefused
from recon.ledger.wire import LedgerUnavailable, exchange

TIMEOUT_SECONDS = 30.0


class TrytonUnavailable(LedgerUnavailable):
    """Tryton answered 5xx/429 or no whole answer at all: temporary (recon/ledger/wire.py)."""

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
                 journal: str, taxes: dict[str, str] | None = None,
                 party_by: str = str(default_of("RECON_LEDGER_PARTY_BY")),
                 create_parties: bool = False) -> None:
        self.url = url.rstrip("/") + "/rpc/"
        self.user, self.password = user, password
        self.codes = {"payable": payable, "variance": variance, "journal": journal}
        self.tax_codes = taxes or {}
        self.party_by, self.create_parties = party_by, create_parties
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
        status, raw = exchange(request, TIMEOUT_SECONDS, f"Tryton at {self.url} ({method})",
                               TrytonUnavailable)
        if status in (401, 403):
            raise PermissionError(f"Tryton refused the session ({status})")
        if status == 404:
            raise LedgerSettingsRefused(f"Tryton has no database at {self.url}")
        try:
            answer = json.loads(raw)
        except ValueError:
            raise LedgerRefused(f"Tryton answered {method} ({status}) with no JSON-RPC: "
                                f"{raw[:200].decode(errors='replace')}") from None
        if isinstance(answer, dict) and answer.get("error"):
            raise LedgerRefused(f"Tryton refused {method}: {_words(answer['error'])}")
        if status >= 400 or not isinstance(answer, dict):
            raise LedgerRefused(f"Tryton answered {method} with {status}: {str(answer)[:200]}")
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
        and journal, once per worker. Kept only once all are known: a connection cut half way
        (recon/ledger/wire.py) leaves nothing half known, and the next attempt starts over."""
        async with self._ready:
            if self._auth and all(what in self._ids for what in self.codes):
                return
            found_ids: dict[str, int] = {}
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
                        f"{code!r} (the {what} step 7 posts on)" + (
                            "" if found or self._context.get("company") else
                            f"; Tryton user {self.user} has no current company: add the company to "
                            "its Companies and make it the Current Company (docs/ledger.md)"))
                found_ids[what] = found[0]
            self._ids.update(found_ids)

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

    def _party_clause(self, supplier_id: str, name: str, gstin: str | None) -> tuple[list, str]:
        """The search for the supplier's own party (RECON_LEDGER_PARTY_BY), and the words for
        none found."""
        who = f"supplier {supplier_id}" + (f" ({name})" if name else "")
        if self.party_by == "tax_identifier":
            if not gstin:
                raise LedgerRefused(f"{who}: recon's suppliers table holds no GSTIN to find its "
                                    "Tryton party by (RECON_LEDGER_PARTY_BY=tax_identifier)")
            return [("tax_identifier.code", "=", gstin)], f"{who}: no Tryton party with tax " \
                f"identifier {gstin}"
        return [("code", "=", supplier_id)], f"{who}: no Tryton party with code {supplier_id}"

    def missing_party(self, supplier_id: str, name: str = "", gstin: str | None = None) -> str:
        """What a night says when this supplier has no party: it hands over with these words."""
        return self._party_clause(supplier_id, name, gstin)[1]

    async def prepare(self) -> None:
        """Log in and find the configured accounts and journal (what every post needs first)."""
        await self._prepare()

    async def party_of(self, supplier_id: str, name: str = "",
                       gstin: str | None = None) -> dict | None:
        """The Tryton party the accountant keeps for this supplier ({id, name, code}), found by
        RECON_LEDGER_PARTY_BY, or None. Two parties for one supplier is refused: recon would
        have to guess which payable the accountant reconciles."""
        clause, missing = self._party_clause(supplier_id, name, gstin)
        found = await self._call("model.party.party.search_read", clause, 0, 2, None,
                                 ["name", "code"])
        if len(found) > 1:
            ids = ", ".join(str(p["id"]) for p in found)
            raise LedgerRefused(missing.replace(": no Tryton party", ": more than one Tryton party")
                                + f" (ids {ids}); keep one, or merge them")
        return found[0] if found else None

    async def _party(self, entry: Entry) -> int:
        """The supplier's party: the accountant's own (`party_of`). None there is a refusal naming
        the supplier (the night hands over; once the accountant adds the party, a retry posts),
        unless RECON_LEDGER_CREATE_PARTIES=true (a dev or test Tryton with no suppliers of its
        own), when a party named by the supplier id is found or made."""
        supplier_id = entry.supplier_id
        if supplier_id not in self._parties:
            party = await self.party_of(supplier_id, entry.supplier_name, entry.supplier_gstin)
            if party is not None:
                self._parties[supplier_id] = party["id"]
            elif not self.create_parties:
                missing = self.missing_party(supplier_id, entry.supplier_name,
                                             entry.supplier_gstin)
                raise LedgerRefused(f"{missing}; add the party in Tryton (or set "
                                    "RECON_LEDGER_PARTY_BY), then retry the night")
            else:
                self._parties[supplier_id] = await self._party_by_name(supplier_id)
        return self._parties[supplier_id]

    async def _party_by_name(self, supplier_id: str) -> int:
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
        return found[0]

    # ------------------------------------------------------------------ the port
    async def _moves(self, keys: list[str]) -> list[dict]:
        """Every move described by one of `keys`, draft or posted, lowest id first, each with
        its effect on the supplier payable (a move of ours always has a payable line)."""
        lines = await self._call("model.account.move.line.search_read", [
            ("move.description", "in", keys), ("account", "=", self._ids["payable"]),
        ], 0, None, None, ["move", "debit", "credit", "move.description", "move.state"])
        moves: dict[int, dict] = {}
        for line in lines:
            move = moves.setdefault(line["move"], {
                "id": line["move"], "key": line["move."]["description"],
                "state": line["move."]["state"], "total": Decimal(0)})
            move["total"] += line["debit"] - line["credit"]
        return [moves[k] for k in sorted(moves)]

    async def find(self, keys: list[str]) -> dict[str, list[Found]]:
        """What Tryton holds under each key, by the rule `_settle` keeps: every posted move, and
        the lowest-id move when it is still a draft (a creator stopped between its create and its
        post: it is the one, and it is posted here). A draft above the lowest is a loser's that its
        creator deletes; it is not the key's and is left alone."""
        answer: dict[str, list[Found]] = {k: [] for k in keys}
        if not keys:
            return answer
        await self._prepare()
        by_key: dict[str, list[dict]] = {}
        for move in await self._moves(keys):
            by_key.setdefault(move["key"], []).append(move)
        lowest_drafts = [held[0]["id"] for held in by_key.values() if held[0]["state"] == "draft"]
        if lowest_drafts:
            await self._call("model.account.move.post", lowest_drafts)
        for key, held in by_key.items():
            for move in held:
                if move["state"] == "posted" or move is held[0]:
                    answer[key].append(Found(key, str(move["id"]), _paise(move["total"])))
        return answer

    async def _settle(self, key: str, draft: int, paise: int) -> int:
        """Post the move of `key` that is the one, and return its id: the lowest-id move of the
        key. Our `draft` (created and committed by Tryton before this call) is deleted if a move
        with the key and a lower id exists, draft or posted, and that one is posted instead (a
        post of a move already posted by someone else changes nothing: that is success).

        Why this leaves exactly one posted move whatever the interleaving, with no lock:
        1. Only the lowest-id move of a key is ever posted: here, and in `find`, which posts a
           draft only when it is the lowest of its key.
        2. The lowest-id move never changes once someone has seen it: a move made later gets a
           higher id (Tryton's ids increase), and each creator's create has committed before its
           own look-up, so of two creators the later one's look-up sees the earlier one's move.
        3. So every creator posts the same move, the lowest, and a creator whose draft is not the
           lowest deletes it; Tryton lets a draft be deleted and refuses to delete a posted move,
           and by 1 nobody posts a draft that is not the lowest.
        A creator frozen anywhere (between its look-up and its create, its create and this
        look-up, this look-up and its post) posts the lowest move it saw, which by 2 is the
        lowest there is: a stale attempt woken after a takeover adds nothing. What 2 assumes:
        ids in the order creates commit. SQLite (one writer at a time) gives it; on PostgreSQL
        two creates of one key would have to overlap inside Tryton itself (each is one short
        request) and commit out of id order, which recon's fence leaves to a stale attempt
        woken within milliseconds of the live one's create; step 7's closing check counts posted
        moves per key and would hand that over."""
        held = await self._moves([key])
        lowest = held[0]["id"] if held else draft
        if lowest < draft and _paise(held[0]["total"]) != paise:
            await self._call("model.account.move.delete", [draft])
            raise LedgerDisagrees(f"Tryton move {lowest} carries {key} with "
                                  f"{_paise(held[0]['total'])} paise on the payable; recon's entry "
                                  f"is {paise}: a key reused with another amount, nothing posted")
        if lowest < draft:
            try:
                await self._call("model.account.move.delete", [draft])
            except LedgerRefused:
                # Our draft was posted meanwhile: only by someone who saw no lower id, which the
                # argument above rules out; say so rather than hide a second posted move.
                raise LedgerRefused(f"Tryton moves {lowest} and {draft} both carry {key} and "
                                    f"{draft} cannot be deleted: a person must look") from None
        await self._call("model.account.move.post", [lowest])
        return lowest

    async def post(self, entry: Entry) -> str:
        if entry.currency != BASE_CURRENCY:
            # The company books in ₹ (recon ledger init makes it so): a move line's debit and
            # credit are in its currency, and recon assumes no rate. Refused, never converted.
            raise LedgerRefused(
                f"{entry.key} is {amount(entry.amount_paise, entry.currency)}: the Tryton company "
                f"books in ₹ and recon assumes no exchange rate; post it by hand at the rate of "
                f"the day")
        await self._prepare()
        party = await self._party(entry)
        period = await self._period(entry.business_date)
        # The payable takes the whole claim; the variance its taxable value and each tax part
        # its own account (the input tax the claim takes back), all on the other side.
        lines = [{"account": self._ids["payable"], "party": party, **_side(entry.amount_paise)}]
        taxable = entry.amount_paise if entry.taxable_paise is None else entry.taxable_paise
        lines.append({"account": self._ids["variance"], **_side(-taxable)})
        for part, paise in entry.taxes:
            lines.append({"account": await self._tax_account(part), **_side(-paise)})
        await self.before_create(entry)
        created = await self._call("model.account.move.create", [{
            "journal": self._ids["journal"], "period": period, "date": entry.business_date,
            "description": entry.key, "lines": [["create", lines]],
        }])
        await self.before_settle(entry)
        return str(await self._settle(entry.key, created[0], entry.amount_paise))

    async def before_create(self, entry: Entry) -> None:
        """Nothing; a test pauses here (after the look-up, before the draft is made)."""

    async def before_settle(self, entry: Entry) -> None:
        """Nothing; a test pauses here (the draft made, not yet compared with the others)."""

    async def cancel(self, entry: Entry, original_id: str) -> str:
        """Cancel the original under `undo:{key}`, so that it is cancelled once whatever races.

        When the supplier payable reconciles (it does in every chart Tryton ships and in what
        `recon ledger init` makes), Tryton's own `account.move.cancel` wizard is used: it makes
        the reversal, posts it and reconciles it with the original's payable line in one Tryton
        transaction, and Tryton refuses to reconcile a line already reconciled, so a second cancel
        of the same move (a stale attempt woken after another cancelled it) is refused whole and
        lands nothing; recon then finds the first cancelling move under the key and takes it.
        When the payable does not reconcile, nothing in Tryton would refuse the second one, so
        recon makes the reversal itself as a draft (the original's lines, debit and credit
        swapped, its origin the original) and settles it by the rule of `post` (`_settle`)."""
        await self._prepare()
        move = int(original_id)
        if not await self._payable_reconciles():
            return await self._cancel_by_draft(entry, move)
        try:
            await self._cancel_wizard(entry, move)
        except LedgerRefused:
            found = (await self.find([entry.key]))[entry.key]
            if len(found) == 1:  # cancelled by another attempt meanwhile: that is the one
                return found[0].outside_id
            raise
        found = (await self.find([entry.key]))[entry.key]
        if not found:
            raise LedgerRefused(f"Tryton's cancel wizard made no move for {entry.key}")
        return found[0].outside_id

    async def _payable_reconciles(self) -> bool:
        if "payable_reconciles" not in self._ids:
            (account,) = await self._call("model.account.account.read", [self._ids["payable"]],
                                          ["reconcile"])
            self._ids["payable_reconciles"] = int(bool(account["reconcile"]))
        return bool(self._ids["payable_reconciles"])

    async def _cancel_wizard(self, entry: Entry, move: int) -> None:
        context = {**self._context, "active_model": "account.move", "active_id": move,
                   "active_ids": [move]}
        wizard = "wizard.account.move.cancel"
        await self.before_create(entry)
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

    async def _cancel_by_draft(self, entry: Entry, move: int) -> str:
        (original,) = await self._call("model.account.move.read", [move],
                                       ["journal", "period", "date"])
        lines = await self._call("model.account.move.line.search_read", [("move", "=", move)],
                                 0, None, None, ["account", "party", "debit", "credit"])
        swapped = [{"account": ln["account"], "party": ln["party"], "debit": ln["credit"],
                    "credit": ln["debit"], "origin": f"account.move.line,{ln['id']}"}
                   for ln in lines]
        await self.before_create(entry)
        created = await self._call("model.account.move.create", [{
            "journal": original["journal"], "period": original["period"],
            "date": original["date"], "description": entry.key,
            "origin": f"account.move,{move}", "lines": [["create", swapped]],
        }])
        await self.before_settle(entry)
        return str(await self._settle(entry.key, created[0], entry.amount_paise))

    async def close(self) -> None:
        return None
