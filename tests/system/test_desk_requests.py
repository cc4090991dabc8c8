"""Undo, redo and the answer to a refused message, signed on the desk by a passkey (issue 46,
docs/desk.md "Signed requests"), in a real headless Chromium with its virtual authenticator: a
supplier undone and redone from the night's page (an approver over their limit refused first), a
refused debit note sent again; the undo's
assertion replayed onto another request refused in one line; a revoked passkey signs in no more.
The verdicts come from where the CLI's signed requests are checked: the undo and redo workflows'
check activity and the mail transaction, against Postgres.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.parse
from pathlib import Path

import asyncpg
import pytest
from temporalio.client import Client

from recon.domain.passkeys import b64url
from recon.domain.requests import MAIL_RESEND, REDO, UNDO
from recon.runtime.embedded import free_port
from recon.tools.seed import seed_night
from tests.conftest import Stack
from tests.helpers import ROOT, inprocess_worker, recon_cli, settings_for, start, wait_for
from tests.system.test_desk import ARGS, CHROMIUM, _add, _desk, _outcome, _passkey_page, _shot

pytestmark = pytest.mark.slow

LIVE = ("SELECT count(*) FROM ledger_entries l WHERE l.workflow_id = $1 AND l.supplier_id = $2"
        " AND l.reverses IS NULL AND l.kind <> 'reversal'"
        " AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.reverses = l.reference)")


async def _refused_note(pool: asyncpg.Pool, wf: str, supplier: str) -> str:
    """A debit note the mail server refused for good, its delivery handover open."""
    key = f"{wf}:debit-note:{supplier}:desk"
    await pool.execute(
        "INSERT INTO outbox (key, workflow_id, kind, supplier_id, recipient, subject, body,"
        " amount_paise, attempts, failed_at, last_error) VALUES ($1, $2, 'debit-note', $3,"
        " 'old@supplier.example', 'Debit note', 'b', 125000, 1, now(), '550 no such user')",
        key, wf, supplier)
    await pool.execute("INSERT INTO mail_handovers (outbox_key, workflow_id, reply, note)"
                       " VALUES ($1, $2, '550 no such user', 'refused')", key, wf)
    return key


async def _submit(page, form: str, **fields: str) -> str:
    for name, value in fields.items():
        await page.fill(f"{form} input[name={name}]", value)
    await page.click(f"{form} button[type=submit]")
    return await _outcome(page)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (.ci/run)")
async def test_undo_redo_and_resend_signed_on_the_desk_and_a_replay_and_a_revoked_passkey_refused(
        stack: Stack, pool: asyncpg.Pool, client: Client, night, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright

    day, wh, queue = night
    port = free_port()
    origin = f"http://localhost:{port}"
    name = f"farah-{wh}"
    settings = settings_for(queue, desk_origin=origin, desk_rp_id="localhost")
    env = stack.env(RECON_DESK_ORIGIN=origin)
    await seed_night(pool, day, wh, invoices=24, mismatches=4)
    async with inprocess_worker(settings):
        wf = (await (await start(client, settings, day, wh)).result()).workflow_id
        posted = [r["supplier_id"] for r in await pool.fetch(
            "SELECT DISTINCT supplier_id FROM ledger_entries WHERE workflow_id = $1"
            " ORDER BY supplier_id", wf)]
        assert posted, "the seeded night posted nothing"
        supplier = posted[0]
        others = await pool.fetchval("SELECT count(*) FROM ledger_entries WHERE workflow_id = $1"
                                     " AND supplier_id <> $2", wf, supplier)
        key = await _refused_note(pool, wf, supplier)
        link = await _add(env, name)
        junior_link = await _add(env, f"jatin-{wh}", "--limit", "1")
        async with _desk(stack, port, origin, tmp_path, RECON_TASK_QUEUE=queue), \
                async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            page = await _passkey_page(browser, link)
            sent: list[dict] = []
            page.on("request", lambda r: sent.append(json.loads(r.post_data))
                    if r.url.endswith("/request") else None)

            # an approver over their limit (₹1) is refused by the check, on their own session
            row = f'tr[data-supplier="{supplier}"]'
            junior = await _passkey_page(browser, junior_link)
            await junior.goto(f"{origin}/night/{wf}/requests")
            over = await _submit(junior, f"{row} form.undo-supplier", reason="mine to undo?")
            assert over.startswith("refused:") and f"over jatin-{wh}'s limit" in over, over
            assert await pool.fetchval(LIVE, wf, supplier) > 0

            # from the night's page: undo one supplier
            await page.goto(f"{origin}/night/{wf}")
            await page.click("#to-requests")
            await page.wait_for_url("**/requests", timeout=60_000)
            await _shot(page, "requests")
            undone = await _submit(page, f"{row} form.undo-supplier",
                                   reason="the supplier's credit note came in")
            assert "finished (supplier" in undone and not undone.startswith("refused"), undone
            assert await pool.fetchval(LIVE, wf, supplier) == 0

            # the undo's assertion replayed onto the whole night's undo: refused, one line
            assertion = sent[-1]["assertion"]

            async def replay(route) -> None:
                body = json.loads(route.request.post_data)
                body["assertion"] = assertion
                await route.continue_(post_data=json.dumps(body))

            await page.reload()
            await page.route("**/request", replay)
            refused = await _submit(page, "#undo-night", reason="all of it")
            assert refused.startswith("refused:") and "\n" not in refused, refused
            assert "does not verify" in refused, refused
            assert await pool.fetchval("SELECT count(*) FROM ledger_entries WHERE workflow_id = $1"
                                       " AND supplier_id <> $2", wf, supplier) == others
            await page.unroute("**/request")

            # redo the supplier: its entries are live again, under fresh keys
            await page.reload()
            redone = await _submit(page, f"{row} form.redo-supplier", reason="credit note void")
            assert redone.startswith("redo ") and not redone.startswith("refused"), redone
            await wait_for(lambda: pool.fetchval(LIVE, wf, supplier), 120,
                           "the redone supplier's entries")

            # the refused debit note, sent again to a corrected address
            await page.goto(f"{origin}/message/{urllib.parse.quote(key)}")
            await _shot(page, "message")
            resent = await _submit(page, "#resend", to="new@supplier.example", note="moved")
            assert resent == f"{key} queued again for new@supplier.example", resent
            decided = await pool.fetchrow("SELECT decision, decided_by FROM mail_handovers"
                                          " WHERE outbox_key = $1", key)
            assert tuple(decided) == ("resend", name), decided
            spent = await pool.fetch("SELECT purpose FROM spent_signatures WHERE signer = $1"
                                     " ORDER BY used_at", name)
            assert [s["purpose"] for s in spent] == [UNDO, REDO, MAIL_RESEND], spent
            assert await pool.fetchval("SELECT count(*) FROM passkey_assertions"
                                       " WHERE approver = $1", name) == 3

            # the passkey revoked (a lost device): the session ends, it signs in no more
            credential = b64url(await pool.fetchval(
                "SELECT credential_id FROM approver_passkeys WHERE approver = $1", name))
            listed = await asyncio.to_thread(recon_cli, env, "approvers", "passkeys", name)
            assert listed.returncode == 0 and credential[:8] in listed.stdout, listed.stdout
            revoked = await asyncio.to_thread(recon_cli, env, "approvers", "revoke-passkey",
                                              name, credential[:10])
            assert revoked.returncode == 0 and "revoked at" in revoked.stdout, \
                revoked.stdout + revoked.stderr
            await page.goto(f"{origin}/nights")
            assert page.url.endswith("/signin"), page.url
            await page.click("#signin")
            assert (await _outcome(page)).startswith("sign-in refused")
            await browser.close()

    # the requests' stored evidence verifies with the webauthn package alone
    checked = await asyncio.to_thread(
        subprocess.run, [sys.executable, "bench/verify_desk_decision.py", "--approver", name],
        cwd=ROOT, env=stack.env(RECON_DESK_RP_ID="localhost"), capture_output=True, text=True,
        timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("verifies: ") for line in lines), lines
    assert f"{name} signed {UNDO} of {wf} supplier {supplier}" in checked.stdout, lines
