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
from datetime import date
from decimal import Decimal
from typing import Any

from recon.domain.money import BASE_CURRENCY, amount
from recon.domain.settings_table import default_of
from recon.ledger.port import Entry, Found, LedgerDisagrees, LedgerRefused
from recon.ledger.tryton_json import TrytonUnavailable, send
from recon.ledger.tryton_json import paise as _paise
from recon.ledger.tryton_json import side as _side

__all__ = ["TrytonLedger", "TrytonUnavailable"]  # TrytonUnavailable: what the adapter raises

# The move's field that recon's Tryton module (recon_keys) adds, unique by Tryton's constraint,
# and the words its refusal carries (recon_keys/message.xml).
KEY_FIELD = "recon_key"
KEY_TAKEN = "recon_key_unique"


class TrytonLedger:
    name = "tryton"
    looks_up = True

    def __init__(self, url: str, user: str, password: str, *, payable: str, variance: str,
                 journal: str, taxes: dict[str, str] | None = None,
                 party_by: str = str(default_of("RECON_LEDGER_PARTY_BY")),
                 create_parties: bool = False,
                 batch: int = int(default_of("RECON_LEDGER_BATCH"))) -> None:
        self.url = url.rstrip("/") + "/rpc/"
        self.user, self.password = user, password
        self.codes = {"payable": payable, "variance": variance, "journal": journal}
        self.tax_codes = taxes or {}
        self.party_by, self.create_parties = party_by, create_parties
        # Entries the pusher hands `post_many` at once (RECON_LEDGER_BATCH): one create, one
        # look-up, one post for all. 100 moves (about 300 lines) keep each call a few seconds at
        # most on a loaded Tryton, well inside the pusher's idle limit (OUTSIDE_CALL_SECONDS).
        self.batch = batch
        self._auth: str | None = None
        self._context: dict = {}
        self._ids: dict[str, int] = {}
        self._parties: dict[str, int] = {}
        self._periods: dict[date, int] = {}
        self._ready = asyncio.Lock()
        self.keyed = False  # learnt in `_prepare`: does this Tryton have recon_keys?

    # ------------------------------------------------------------------ the wire
    def _send(self, method: str, params: list, auth: str | None) -> Any:
        return send(self.url, method, params, auth)

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
            # recon_keys (recon/ledger/tryton_module) adds `recon_key` to the move: with it,
            # Tryton itself refuses a second move of a key (`_post_keyed`).
            fields = await asyncio.to_thread(
                self._send, "model.account.move.fields_get", [[KEY_FIELD], self._context],
                self._auth)
            self.keyed = KEY_FIELD in fields
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

    async def _post(self, moves: list[int]) -> None:
        """Post these moves in one call. Tryton refuses its post button on a move already posted
        (another attempt's `find` may have posted one meanwhile: that is success), so on a
        refusal the states are read and the moves still draft are posted again; a refusal with
        every move still draft is Tryton's own (a closed period) and is raised."""
        while moves:
            try:
                await self._call("model.account.move.post", moves)
                return
            except LedgerRefused:
                states = await self._call("model.account.move.read", moves, ["state"])
                drafts = [m["id"] for m in states if m["state"] == "draft"]
                if len(drafts) == len(moves):
                    raise
                moves = drafts

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
            await self._post(lowest_drafts)
        for key, held in by_key.items():
            for move in held:
                if move["state"] == "posted" or move is held[0]:
                    answer[key].append(Found(key, str(move["id"]), _paise(move["total"])))
        return answer

    async def _settle(self, drafts: dict[str, tuple[int, int]]) -> dict[str, int]:
        """Post the move of each key that is the one, and return its id: the lowest-id move of the
        key. `drafts` holds, per key, our draft (created and committed by Tryton before this call)
        and the entry's amount in paise. All keys are looked up in one call, every draft that is
        not the lowest of its key is deleted in one call and every lowest move posted in one call
        (a post of a move already posted by someone else changes nothing: that is success).

        Why this leaves exactly one posted move per key whatever the interleaving, with no lock
        (each key on its own: a batch is many keys side by side, none depends on another):
        1. Only the lowest-id move of a key is ever posted: here, and in `find`, which posts a
           draft only when it is the lowest of its key.
        2. The lowest-id move never changes once someone has seen it: a move made later gets a
           higher id (Tryton's ids increase), and each creator's create has committed before its
           own look-up (a batch's create is one Tryton transaction, committed whole before the
           batch's look-up), so of two creators the later one's look-up sees the earlier one's.
        3. So every creator posts the same move, the lowest, and a creator whose draft is not the
           lowest deletes it; Tryton lets a draft be deleted and refuses to delete a posted move,
           and by 1 nobody posts a draft that is not the lowest.
        A creator frozen anywhere (between its look-up and its create, its create and this
        look-up, this look-up and its post) posts the lowest move it saw, which by 2 is the
        lowest there is: a stale attempt woken after a takeover adds nothing. What 2 assumes:
        ids in the order creates commit. SQLite (one writer at a time) gives it; on PostgreSQL
        two creates of one key would have to overlap inside Tryton itself and commit out of id
        order, which recon's fence leaves to a stale attempt woken within milliseconds of the live
        one's create; step 7's closing check counts posted moves per key and would hand that over.
        Tryton with recon's module (`recon_keys`, docs/ledger.md) closes that gap: there a second
        move of a key is refused by Tryton's own unique constraint."""
        held: dict[str, list[dict]] = {}
        for move in await self._moves(list(drafts)):
            held.setdefault(move["key"], []).append(move)
        lowest: dict[str, int] = {}
        losers: list[int] = []
        disagrees: LedgerDisagrees | None = None
        for key, (draft, paise) in drafts.items():
            first = held[key][0] if held.get(key) else None
            lowest[key] = first["id"] if first else draft
            if first and lowest[key] < draft:
                losers.append(draft)
                if disagrees is None and _paise(first["total"]) != paise:
                    disagrees = LedgerDisagrees(
                        f"Tryton move {first['id']} carries {key} with {_paise(first['total'])} "
                        f"paise on the payable; recon's entry is {paise}: a key reused with "
                        "another amount, nothing posted")
        if losers:
            try:
                await self._call("model.account.move.delete", losers)
            except LedgerRefused:
                # A draft of ours was posted meanwhile: only by someone who saw no lower id, which
                # the argument above rules out; say so rather than hide a second posted move.
                raise LedgerRefused(
                    f"Tryton moves {', '.join(map(str, losers))} carry keys held by lower moves "
                    "and cannot all be deleted: a person must look") from None
        if disagrees is not None:
            raise disagrees  # the other keys' lowest drafts stay drafts: `find` posts them
        await self._post(sorted(set(lowest.values())))
        return lowest

    @staticmethod
    def _refuse_other_currency(entry: Entry) -> None:
        """The company books in ₹ (recon ledger init makes it so): a move line's debit and credit
        are in its currency, and recon assumes no rate. Refused, never converted, before any
        call to Tryton."""
        if entry.currency != BASE_CURRENCY:
            raise LedgerRefused(
                f"{entry.key} is {amount(entry.amount_paise, entry.currency)}: the Tryton company "
                f"books in ₹ and recon assumes no exchange rate; post it by hand at the rate of "
                f"the day")

    async def _move(self, entry: Entry) -> dict:
        """The move of one entry as Tryton's `create` takes it (a refusal names its entry)."""
        self._refuse_other_currency(entry)
        party = await self._party(entry)
        period = await self._period(entry.business_date)
        # The payable takes the whole claim; the variance its taxable value and each tax part
        # its own account (the input tax the claim takes back), all on the other side.
        lines = [{"account": self._ids["payable"], "party": party, **_side(entry.amount_paise)}]
        taxable = entry.amount_paise if entry.taxable_paise is None else entry.taxable_paise
        lines.append({"account": self._ids["variance"], **_side(-taxable)})
        for part, paise in entry.taxes:
            lines.append({"account": await self._tax_account(part), **_side(-paise)})
        move = {"journal": self._ids["journal"], "period": period, "date": entry.business_date,
                "description": entry.key, "lines": [["create", lines]]}
        return {**move, KEY_FIELD: entry.key} if self.keyed else move

    async def post(self, entry: Entry) -> str:
        return (await self.post_many([entry]))[0]

    async def post_many(self, entries: list[Entry]) -> list[str]:
        """Post a batch: every draft in one `create` (one Tryton transaction: all made or none),
        then `_settle` for all their keys at once. Returns the ids in the entries' order. A
        refusal (a closed period, an unknown account) refuses the whole batch; the pusher then
        settles its entries one by one, so the refusal names its entry and the rest post."""
        for entry in entries:
            self._refuse_other_currency(entry)
        await self._prepare()
        moves = [await self._move(entry) for entry in entries]
        if self.keyed:
            return await self._post_keyed(entries, moves)
        await self.before_create(entries[0])
        created = await self._call("model.account.move.create", moves)
        await self.before_settle(entries[0])
        settled = await self._settle({entry.key: (draft, entry.amount_paise)
                                      for entry, draft in zip(entries, created, strict=True)})
        return [str(settled[entry.key]) for entry in entries]

    async def _post_keyed(self, entries: list[Entry], moves: list[dict]) -> list[str]:
        """With recon_keys: each move carries its key in its own create, and Tryton's unique
        constraint refuses a move whose key is already in the books, whatever the ids and
        whoever races (on PostgreSQL a second create of a key waits for the first to commit,
        then is refused). A refused create makes nothing (one transaction); recon then looks the
        batch's keys up, takes what is there (a draft left by a creator stopped before its post
        is posted by `find`: it is the only move of its key) and creates the rest again."""
        ids: dict[str, str] = {}
        todo = list(zip(entries, moves, strict=True))
        for _ in range(len(entries) + 1):  # each refusal finds at least one key already there
            if not todo:
                break
            await self.before_create(todo[0][0])
            try:
                created = await self._call("model.account.move.create", [m for _, m in todo])
            except LedgerRefused as exc:
                if KEY_TAKEN not in str(exc):
                    raise
                held = await self.find([entry.key for entry, _ in todo])
                for entry, _ in todo:
                    for found in held[entry.key]:
                        if found.amount_paise != entry.amount_paise:
                            raise LedgerDisagrees(
                                f"Tryton move {found.outside_id} carries {entry.key} with "
                                f"{found.amount_paise} paise on the payable; recon's entry is "
                                f"{entry.amount_paise}: a key reused with another amount") from None
                        ids[entry.key] = found.outside_id
                todo = [(entry, move) for entry, move in todo if entry.key not in ids]
                continue
            await self.before_settle(todo[0][0])
            await self._post(created)
            ids.update((entry.key, str(move)) for (entry, _), move in zip(todo, created, strict=True))
            todo = []
        if todo:
            raise LedgerRefused(f"Tryton refused {todo[0][0].key} as already in the books, yet "
                                "holds no move with it: a person must look")
        return [ids[entry.key] for entry in entries]

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
        reversal = {"journal": original["journal"], "period": original["period"],
                    "date": original["date"], "description": entry.key,
                    "origin": f"account.move,{move}", "lines": [["create", swapped]]}
        if self.keyed:  # Tryton refuses a second reversal of the key itself
            return (await self._post_keyed([entry], [{**reversal, KEY_FIELD: entry.key}]))[0]
        await self.before_create(entry)
        created = await self._call("model.account.move.create", [reversal])
        await self.before_settle(entry)
        return str((await self._settle({entry.key: (created[0], entry.amount_paise)}))[entry.key])

    async def close(self) -> None:
        return None
