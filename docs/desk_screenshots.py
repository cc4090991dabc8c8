"""Take the desk's screenshots (docs/desk.md): every page on the README's example nights and on a
seeded month.

    uv run python docs/desk_screenshots.py [--month-db DIR]   # needs Debian's chromium

The README's nights: starts its own Temporal dev server and Postgres, runs the README's day of use
as a person would (`recon approvers add`, `recon load`, `recon import` for 13 and 14 October at
`ldh`, each night run by a real worker), photographs the 14th held at the gate and its handover
page, resumes it with asha's signed decision, then photographs the nights, both nights' pages and
the month. `--month-db DIR`: also the month kept by `bench/night.py --history 30 --warehouses 20
--keep DIR` (the page bench's database): its month page and a night of it.

The desk runs in this process under uvicorn on a loopback port; the browser carries a session
signed in the way a passkey sign-in leaves it (the ceremony itself is tests/system/test_desk.py's
and docs/screenshots' desk-signin.png). Playwright drives the system Chromium; it downloads
nothing. No mail server runs, so debit notes read "waiting to be sent".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import uvicorn  # noqa: E402
from temporalio.client import Client  # noqa: E402

from recon.desk.app import make_app  # noqa: E402
from recon.desk.sessions import COOKIE  # noqa: E402
from recon.runtime.config import load_settings  # noqa: E402
from recon.runtime.devstack import embedded_stack, prepare_database  # noqa: E402
from recon.runtime.embedded import EmbeddedPostgres, TemporalDevServer, free_port  # noqa: E402
from recon.store import approvers, desk_month  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from tests.desk_reader import reading_session  # noqa: E402

OUT = ROOT / "docs" / "desk"
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@contextlib.asynccontextmanager
async def serving(pool, client: Client, reader: str):
    """The desk on a loopback port, and a session cookie for `reader`."""
    port = free_port()
    app = make_app(pool, client, f"http://localhost:{port}", "localhost")
    session = await reading_session(app.state.desk, reader)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    try:
        yield f"http://localhost:{port}", session.id
    finally:
        server.should_exit = True
        await task


async def photograph(base: str, cookie: str, shots: list[tuple[str, str]]) -> None:
    from playwright.async_api import async_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        await context.add_cookies([{"name": COOKIE, "value": cookie, "url": base}])
        page = await context.new_page()
        for name, path in shots:
            await page.goto(base + path)
            await page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
            print(f"docs/desk/{name}.png: {path}")
        await browser.close()


def cli(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "recon.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    if done.returncode not in (0, 3):  # 3: the night waits for a person
        raise SystemExit(f"recon {' '.join(args)}: {done.stdout}{done.stderr}")


async def readme_nights(stack, settings, state: Path) -> None:
    from recon.ops.approvers import load_key, signed_decision
    from recon.runtime.temporal_client import connect
    from starter import start_night
    from tests.helpers import inprocess_worker

    env = {k: v for k, v in os.environ.items() if not k.startswith("RECON_")}
    key = state / "asha.pem"
    env.update(DATABASE_URL=stack.postgres.url, TEMPORAL_ADDRESS=stack.settings().temporal_address,
               RECON_HOME=str(state / "home"))
    cli(env, "approvers", "add", "asha", "--email", "asha@distributor.example", "--role", "admin",
        "--key-file", str(key))
    env["RECON_APPROVER_KEY"] = str(key)
    for table in ("suppliers", "orders", "receipts"):
        cli(env, "load", table, f"examples/master-data/{table}.csv")
    cli(env, "import", "examples/invoices", "--date", "2026-10-13", "--warehouse", "ldh")
    cli(env, "import", "examples/invoices-2026-10-14", "--date", "2026-10-14", "--warehouse", "ldh")
    pool = await connect_pool(stack.postgres.url)
    client = await connect(settings)
    async with inprocess_worker(settings):
        first = await start_night(client, settings, "2026-10-13", "ldh")
        await first.result()
        second = await start_night(client, settings, "2026-10-14", "ldh")
        while (await second.query("progress"))["status"] != "AwaitingDecision":
            await asyncio.sleep(0.3)
        await asyncio.sleep(1)  # the handover row is written a moment before the run waits
        async with serving(pool, client, "asha") as (base, cookie):
            await photograph(base, cookie, [
                ("held-night", f"/night/{second.id}"), ("handover", f"/night/{second.id}/handover")])
            await second.execute_update("decide", await signed_decision(
                pool, load_key(key), run=second.id, handover_no=1, decision="resume", by="asha",
                note="billed twice: claim it", park=[]))
            await second.result()
            await photograph(base, cookie, [
                ("nights", "/nights"), ("night", f"/night/{first.id}"),
                ("decided-night", f"/night/{second.id}"), ("month", "/month?month=2026-10")])
    await pool.close()


async def seeded_month(keep: Path) -> None:
    postgres = EmbeddedPostgres(keep)
    url = postgres.start()
    state = Path(tempfile.mkdtemp(prefix="desk-shots-"))
    temporal = TemporalDevServer(state, port=free_port(), ui_port=free_port(), persistent=False)
    temporal.start()
    try:
        pool = await connect_pool(url, max_size=8)
        await migrate(pool)
        reader = next((a.name for a in await approvers.all_approvers(pool) if a.active), None)
        if reader is None:
            raise SystemExit(f"{keep}: no approver on record (run bench/desk_pages.py on it first)")
        month = await desk_month.latest_month(pool)
        night = await desk_month.latest_night(pool)
        client = await Client.connect(temporal.address)
        async with serving(pool, client, reader) as (base, cookie):
            await photograph(base, cookie, [
                ("month-seeded", f"/month?month={month}"),
                ("month-seeded-warehouse", f"/month?month={month}&warehouse=w07"),
                ("nights-seeded", "/nights?night=w07"), ("night-seeded", f"/night/{night}")])
        await pool.close()
    finally:
        temporal.stop()
        postgres.stop()
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--month-db", type=Path, default=None,
                        help="also the month kept by bench/night.py --keep DIR")
    args = parser.parse_args()
    base = load_settings()
    state = Path(tempfile.mkdtemp(prefix="desk-shots-"))
    try:
        with embedded_stack(state, free_port(), free_port(), persistent=False, settings=base) as stack:
            asyncio.run(prepare_database(stack.postgres.url))
            settings = replace(stack.settings(base), task_queue="desk-screenshots")
            asyncio.run(readme_nights(stack, settings, state))
    finally:
        shutil.rmtree(state, ignore_errors=True)
    if args.month_db:
        asyncio.run(seeded_month(args.month_db))


if __name__ == "__main__":
    main()
