"""The Tryton user recon logs in as (docs/ledger.md, "The Tryton user recon logs in as"): a user
in the Accounting group alone posts and cancels; without a current company every look-up finds
nothing, and recon says that, not only "no account.account with code AP"."""

from __future__ import annotations

from datetime import date

import pytest

from recon.ledger.port import Entry, LedgerRefused
from recon.ledger.tryton import TrytonLedger
from tests.tryton import TrytonServer

pytestmark = pytest.mark.slow

PASSWORD = "recon-user-pw-2026"


def _recon_user(tryton: TrytonServer) -> int:
    (accounting,) = tryton._rpc("model.res.group.search", [("name", "=", "Accounting")], 0, None,
                                None)
    (user,) = tryton._rpc("model.res.user.create", [{
        "name": "recon", "login": "recon", "password": PASSWORD,
        "groups": [["add", [accounting]]],
        # made before the company, or on books with several: Tryton gives it none
        "companies": [], "company": None}])
    return user


def _ledger(tryton: TrytonServer) -> TrytonLedger:
    return TrytonLedger(tryton.url, "recon", PASSWORD, payable="AP", variance="PPV",
                        journal="EXP")


async def test_an_accounting_user_with_no_current_company_is_told_so_then_posts_once_given_one(
    tryton: TrytonServer,
) -> None:
    user = _recon_user(tryton)
    with pytest.raises(LedgerRefused) as refused:
        await _ledger(tryton).prepare()
    words = str(refused.value)
    assert "Tryton has no account.account with code 'AP'" in words
    assert "Tryton user recon has no current company" in words

    (company,) = tryton._rpc("model.company.company.search", [], 0, None, None)
    tryton._rpc("model.res.user.write", [user], {"companies": [["add", [company]]],
                                                 "company": company})
    tryton._rpc("model.party.party.create", [{"name": "Sharma Foods Pvt Ltd", "code": "S001"}])
    ledger = _ledger(tryton)
    entry = Entry("recon-2026-10-13-ldh:INV-1:1:price", 12_345, "S001", "INV-1", 1, "price",
                  date(2026, 10, 13), supplier_name="Sharma Foods")
    moved = await ledger.post(entry)
    assert [(m["id"], m["state"], m["paise"]) for m in tryton.moves()] == [(int(moved), "posted",
                                                                            12_345)]
    undo = Entry(f"undo:{entry.key}", -12_345, "S001", "INV-1", 1, "price", date(2026, 10, 13),
                 reverses=entry.key)
    await ledger.cancel(undo, moved)
    assert sorted(m["paise"] for m in tryton.moves()) == [-12_345, 12_345]
