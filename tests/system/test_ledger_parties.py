"""The books' own suppliers (docs/ledger.md, "Suppliers and parties"): on a Tryton that already
holds recon's suppliers as parties, every move goes on the accountant's party, found by its code
or by its tax identifier (the GSTIN), and no party is created; a supplier with none hands the
night over naming it. `recon ledger check` shows the map and every supplier with no party."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from temporalio.client import Client

from recon.tools.seed import seed_night
from tests.helpers import first_handover, inprocess_worker, recon_cli, settings_for, start
from tests.tryton import TrytonServer

pytestmark = pytest.mark.slow


def _settings(queue: str, tryton: TrytonServer, party_by: str):
    env = tryton.env()
    return settings_for(queue, ledger="tryton", ledger_url=env["RECON_LEDGER_URL"],
                        ledger_secret_file=env["RECON_LEDGER_SECRET_FILE"],
                        ledger_party_by=party_by, ledger_create_parties="false")


def _cli_env(stack, tryton: TrytonServer, party_by: str) -> dict[str, str]:
    return {**stack.env(), **tryton.env(), "RECON_LEDGER_PARTY_BY": party_by,
            "RECON_LEDGER_CREATE_PARTIES": "false"}


async def _suppliers(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    return await pool.fetch("SELECT supplier_id, name, gstin FROM suppliers ORDER BY supplier_id")


def _the_accountants_parties(tryton: TrytonServer, suppliers, by: str, leave_out: str = "") -> dict:
    """The books as an accountant keeps them: each supplier a party under its trading name, with
    either its code or its GSTIN (the other left to Tryton; a supplier with no GSTIN, from another
test of the session's database, gets none). Returns party id -> supplier id."""
    values = []
    kept = []
    for s in suppliers:
        if s["supplier_id"] == leave_out or (by != "code" and not s["gstin"]):
            continue
        kept.append(s["supplier_id"])
        party = {"name": f"{s['name']} Pvt Ltd"}
        if by == "code":
            party["code"] = s["supplier_id"]
        else:
            party["identifiers"] = [["create", [{"type": "in_vat", "code": s["gstin"]}]]]
        values.append(party)
    ids = tryton._rpc("model.party.party.create", values)
    return dict(zip(ids, kept, strict=True))


def _payable_parties(tryton: TrytonServer) -> dict[str, int]:
    """recon's key -> the party of its move's payable line."""
    return {line["move."]["description"]: line["party"] for line in tryton._rpc(
        "model.account.move.line.search_read", [("account.code", "=", "AP")], 0, None, None,
        ["party", "move.description"])}


@pytest.mark.parametrize("by", ["code", "tax_identifier"])
async def test_every_move_goes_on_the_accountants_own_party_and_none_is_created(
    pool: asyncpg.Pool, client: Client, night, stack, tryton: TrytonServer, by: str
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=80, mismatches=12)
    suppliers = await _suppliers(pool)
    supplier_of_party = _the_accountants_parties(tryton, suppliers, by)
    parties_before = tryton._rpc("model.party.party.search_count", [])

    checked = await asyncio.to_thread(recon_cli, _cli_env(stack, tryton, by), "ledger", "check")
    mapped = len(supplier_of_party)
    assert checked.returncode == (0 if mapped == len(suppliers) else 1), \
        checked.stdout + checked.stderr
    assert f"{mapped} of {len(suppliers)} suppliers -> Tryton parties by {by}" in checked.stdout
    assert "module recon_keys: activated" in checked.stdout  # recon ledger init's Tryton has it
    for party, sid in supplier_of_party.items():
        name = next(s["name"] for s in suppliers if s["supplier_id"] == sid)
        assert f"  {sid} ({name}) -> party {party} \"{name} Pvt Ltd\"" in checked.stdout

    settings = _settings(queue, tryton, by)
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        await asyncio.wait_for(handle.result(), 180)
    entries = {r["reference"]: r["supplier_id"] for r in await pool.fetch(
        "SELECT reference, supplier_id FROM live_ledger_entries WHERE workflow_id = $1", handle.id)}
    assert len(entries) == 12
    on = _payable_parties(tryton)
    assert {key: supplier_of_party[party] for key, party in on.items()} == entries
    assert tryton._rpc("model.party.party.search_count", []) == parties_before


async def test_a_supplier_with_no_party_hands_over_by_name_and_none_is_created(
    pool: asyncpg.Pool, client: Client, night, stack, tryton: TrytonServer
) -> None:
    day, warehouse, queue = night
    await seed_night(pool, day, warehouse, invoices=80, mismatches=12)
    suppliers = await _suppliers(pool)
    parties_before = tryton._rpc("model.party.party.search_count", [])
    settings = _settings(queue, tryton, "code")
    # No supplier is in the books yet: the night's first entry (in key order) is refused.
    async with inprocess_worker(settings):
        handle = await start(client, settings, day, warehouse)
        note = await first_handover(pool, handle.id)
        # Every entry is refused (no supplier has a party) and recorded failed; the handover
        # names the first in key order, the order the pusher posts in.
        lonely = await pool.fetchval(
            "SELECT l.supplier_id FROM ledger_postings p JOIN ledger_entries l USING (reference)"
            " WHERE p.workflow_id = $1 AND p.state = 'failed'"
            " ORDER BY p.reference COLLATE \"C\" LIMIT 1", handle.id)
        name = next(s["name"] for s in suppliers if s["supplier_id"] == lonely)
        assert note["step"] == "post_adjustments"
        assert f"supplier {lonely} ({name}): no Tryton party with code {lonely}" in \
            note["error_message"], note["error_message"]
        assert tryton.moves() == []
        assert tryton._rpc("model.party.party.search_count", []) == parties_before

        # The accountant adds every party but one: check names that one, and exits 1.
        _the_accountants_parties(tryton, suppliers, "code", leave_out=lonely)
        checked = await asyncio.to_thread(recon_cli, _cli_env(stack, tryton, "code"), "ledger",
                                          "check")
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert "1 suppliers with no party:" in checked.stdout
        assert f"  supplier {lonely} ({name}): no Tryton party with code {lonely}" in checked.stdout

        # ... then that one too: a retry posts every entry once, on its party.
        _the_accountants_parties(tryton, [s for s in suppliers if s["supplier_id"] == lonely],
                                 "code")
        approved = await asyncio.to_thread(
            recon_cli, stack.env(), "approve", handle.id, "--handover", "1", "--decision", "retry",
            "--by", "asha", "--note", "party added")
        assert approved.returncode == 0, approved.stderr
        await asyncio.wait_for(handle.result(), 120)
    assert len(tryton.moves()) == 12
    assert tryton._rpc("model.party.party.search_count", []) == parties_before + len(suppliers)
