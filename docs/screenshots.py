"""Take the README's Web UI screenshots against a real run on the embedded stack.

    uv run --with playwright python docs/screenshots.py        # needs a Chromium: apt-get install chromium
    uv run --with playwright python docs/screenshots.py --encrypted   # codec-decoded-memo.png

Starts its own Temporal dev server (with the Web UI) and Postgres, seeds a night whose gate hands
over to a person, and photographs the Workflows list filtered to runs awaiting a decision, the
waiting run's page (summary, current details, search attributes) and the finished run's page;
then undoes the night and photographs the list with the undo beside it, Undone, and its memo.
Playwright drives the system Chromium (CHROMIUM=/path to choose another); it downloads nothing.
`--encrypted` runs the same night with a fresh payload key: the Web UI reads every payload
through recon's codec server, and the finished run's memo is photographed as the UI shows it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import urllib.parse
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recon.runtime.config import load_settings  # noqa: E402
from recon.runtime.devstack import embedded_stack, prepare_database  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.keyring import new_key_line, parse_keyring  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
DAY, WAREHOUSE = "2026-10-13", "ldh"


async def shoot(page, url: str, path: Path, wait_for: str, tab: str | None = None) -> None:
    for _ in range(30):  # the UI's data API answers 503 for a moment after start
        await page.goto(url)
        try:
            await page.get_by_text(wait_for).first.wait_for(timeout=2000)
            break
        except Exception:
            await asyncio.sleep(0.5)
    if tab:
        await page.get_by_text(tab, exact=True).first.click()
    await page.wait_for_timeout(1200)
    await page.screenshot(path=str(path), full_page=False)
    print(f"wrote {path.relative_to(ROOT)}")


# The Workflows list with recon's labels as columns (the UI keeps its columns in the browser).
COLUMNS = [{"label": c} for c in ("Status", "Workflow ID", "Type", "ReconStatus",
                                   "ReconWarehouse", "ReconDate", "Start", "End")]


async def undone_night(browser, ui: str, client, pool, settings, key, night: str) -> None:
    """Undo the finished night as `recon undo` does, then photograph the list filtered to the
    night's warehouse and date (the night, and its undo beside it, Undone) and the undo's memo."""
    import json
    import urllib.parse

    from recon.domain.requests import UNDO
    from recon.ops.requests import signed_request
    from recon.ops.undo import start_undo

    reason = "the supplier's credit notes arrived"
    await start_undo(client, pool, settings, night, None, [], reason, await signed_request(
        pool, key, UNDO, run=night, supplier=None, references=[], reason=reason, by="asha"))
    page = await browser.new_page(viewport={"width": 1440, "height": 700})
    await page.add_init_script(
        f"localStorage.setItem('namespace-workflow-table-columns', "
        f"{json.dumps(json.dumps({'default': COLUMNS}))})")
    labels = urllib.parse.quote(f'ReconWarehouse="{WAREHOUSE}" AND ReconDate="{DAY}"')
    await shoot(page, f"{ui}/namespaces/default/workflows?query={labels}",
                OUT / "undone-night-list.png", f"undo-{night}")
    await shoot(page, f"{ui}/namespaces/default/workflows/undo-{night}",
                OUT / "undo-memo.png", "COMPLETED", tab="Memo")


async def main(ui: str, settings, encrypted: bool = False) -> None:
    from playwright.async_api import async_playwright

    from recon.ops.approvers import ensure_tool_approver, load_key, signed_decision
    from recon.runtime.temporal_client import connect
    from recon.store.db import connect_pool
    from starter import start_night
    from tests.helpers import inprocess_worker

    pool = await connect_pool(settings.database_url)
    await seed_night(pool, DAY, WAREHOUSE, invoices=312, mismatches=40)
    key_file = Path(tempfile.mkdtemp(prefix="recon-shots-key-")) / "asha.pem"
    await ensure_tool_approver(pool, "asha", "asha@distributor.example", key_file)
    key = load_key(key_file)

    async def decide(note: str) -> None:
        """Resume, signed with asha's key, as `recon approve --decision resume` sends it."""
        await handle.execute_update("decide", await signed_decision(
            pool, key, run=handle.id, handover_no=1, decision="resume", by="asha", note=note,
            park=[]))

    client = await connect(settings)
    OUT.mkdir(parents=True, exist_ok=True)
    async with inprocess_worker(settings):
        handle = await start_night(client, settings, DAY, WAREHOUSE, invoices=312)
        while (await handle.query("progress"))["status"] != "AwaitingDecision":
            await asyncio.sleep(0.3)
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=os.environ.get("CHROMIUM") or shutil.which("chromium"),
                args=["--no-sandbox"])
            page = await browser.new_page(viewport={"width": 1440, "height": 1000})
            if encrypted:
                await decide("prices checked with Sharma Foods")
                await handle.result()
                await shoot(page, f"{ui}/namespaces/default/workflows/{handle.id}",
                            OUT / "codec-decoded-memo.png", "COMPLETED", tab="Memo")
                await browser.close()
                await pool.close()
                return
            query = urllib.parse.quote('ReconStatus="AwaitingDecision"')
            await shoot(page, f"{ui}/namespaces/default/workflows?query={query}",
                        OUT / "awaiting-decision.png", handle.id)
            await shoot(page, f"{ui}/namespaces/default/workflows/{handle.id}",
                        OUT / "run-timeline.png", "step 7: posting ledger adjustments")
            await shoot(page, f"{ui}/namespaces/default/workflows/{handle.id}",
                        OUT / "run-waiting.png", "RUNNING", tab="User Metadata")
            await decide("checked with the supplier")
            await handle.result()
            await shoot(page, f"{ui}/namespaces/default/workflows/{handle.id}",
                        OUT / "run-completed.png", "COMPLETED", tab="Memo")
            await undone_night(browser, ui, client, pool, settings, key, handle.id)
            await browser.close()
    await pool.close()


if __name__ == "__main__":
    encrypted = "--encrypted" in sys.argv[1:]
    base = load_settings()
    if encrypted:
        base = replace(base, payload_keyring=parse_keyring([new_key_line("shots-1")], "screenshots"))
    state = Path(tempfile.mkdtemp(prefix="recon-shots-"))
    try:
        with embedded_stack(state, free_port(), free_port(), persistent=False, settings=base) as stack:
            asyncio.run(prepare_database(stack.postgres.url))
            if stack.codec is not None:
                print(f"payloads encrypted; the Web UI decodes through {stack.codec.url()}")
            settings = replace(stack.settings(base), gate_max_total_paise=100,
                               task_queue="screenshots")
            asyncio.run(main(stack.ui_url, settings, encrypted))
    finally:
        shutil.rmtree(state, ignore_errors=True)
