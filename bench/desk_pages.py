"""How fast the desk's pages answer on a month of 20 warehouses' nights (issue 46: ≤ 200 ms).

    uv run python bench/night.py --history 30 --warehouses 20 --history-invoices 500 \
        --invoices 500 --mismatches 25 --keep DIR        # the database: real nights
    uv run python bench/desk_pages.py --keep DIR [--rounds N]

Starts Postgres again on the kept data (recon.runtime.embedded.EmbeddedPostgres) and an embedded
Temporal dev server (in memory: the nights page asks Temporal whether runs completed, as it does in
production; this one knows none), builds the desk's app in this process (no browser, no network: the
requests go to the ASGI app through httpx's ASGITransport), signs a session in for an active
approver of the database, or one of the bench's own (as a passkey sign-in would leave it), and GETs
every page N times: the nights list, a night, its handover page, and the month (all warehouses, one
warehouse, one supplier). Prints per page the median and the 90th percentile in ms, and OK when the
median is at most 200 ms. What is timed is the whole request (routing, sign-in check, every query,
templates, the charts) as the desk serves it. The first request of each page is printed apart
("first"): on the month page it writes the sums of the month's nights not written yet (once per
night, ever: recon/store/desk_month.py) and draws the charts, which requests with the same figures
reuse; the median and p90 are of the N requests after it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from temporalio.client import Client  # noqa: E402

from recon.desk.app import make_app  # noqa: E402
from recon.desk.sessions import COOKIE  # noqa: E402
from recon.ops.approvers import ensure_tool_approver  # noqa: E402
from recon.runtime.embedded import EmbeddedPostgres, TemporalDevServer, free_port  # noqa: E402
from recon.store import approvers, desk_month  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from tests.desk_reader import reading_session  # noqa: E402

BUDGET_MS = 200.0
READER = "desk-reader"


async def _pages(pool) -> list[tuple[str, str]]:
    """The pages to time, on the kept data: the latest night, the latest month."""
    month = await desk_month.latest_month(pool)
    nights = await desk_month.warehouses(pool, month)
    latest = await desk_month.latest_night(pool)
    return [("nights", "/nights"), ("nights, filtered", "/nights?state=completed&night=w07"),
            ("a night", f"/night/{latest}"), ("a handover", f"/night/{latest}/handover"),
            ("the month", f"/month?month={month}"),
            ("the month, one warehouse", f"/month?month={month}&warehouse={nights[-1]}"),
            ("the month, one supplier", f"/month?month={month}&supplier=S001")]


async def main(keep: Path, rounds: int, url: str | None) -> int:
    postgres = None if url else EmbeddedPostgres(keep)
    url = url or postgres.start()
    state = Path(tempfile.mkdtemp(prefix="desk-bench-"))
    temporal = TemporalDevServer(state, port=free_port(), ui_port=free_port(), persistent=False)
    temporal.start()
    try:
        pool = await connect_pool(url, max_size=8)
        await migrate(pool)
        reader = next((a.name for a in await approvers.all_approvers(pool) if a.active), None)
        if reader is None:  # the bench's own reader, the database's first approver
            reader = READER
            await ensure_tool_approver(pool, READER, f"{READER}@distributor.example",
                                       state / "reader.pem")
        client = await Client.connect(temporal.address)
        app = make_app(pool, client, "http://localhost:8237", "localhost")
        desk = app.state.desk
        session = await reading_session(desk, reader)
        nights, invoices = await desk_month.on_record(pool)
        print(f"database: {nights:,} nights, {invoices:,} invoices read; {rounds} rounds per page")
        ok = True
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://localhost:8237",
                                     cookies={COOKIE: session.id}) as http:
            for name, path in await _pages(pool):
                started = time.perf_counter()
                first = await http.get(path)
                cold = (time.perf_counter() - started) * 1e3
                if first.status_code != 200:
                    print(f"{name}: {path} answered {first.status_code}")
                    ok = False
                    continue
                times = []
                for _ in range(rounds):
                    started = time.perf_counter()
                    answer = await http.get(path)
                    times.append((time.perf_counter() - started) * 1e3)
                    assert answer.status_code == 200, (path, answer.status_code)
                median = statistics.median(times)
                p90 = sorted(times)[int(0.9 * (len(times) - 1))]
                verdict = "OK" if median <= BUDGET_MS else "SLOW"
                ok = ok and median <= BUDGET_MS
                print(f"  {name:<26} first {cold:7.1f} ms  median {median:6.1f} ms  p90 {p90:6.1f} ms  "
                      f"{len(first.content) / 1024:6.0f} KiB  {verdict}  {path}")
        await pool.close()
    finally:
        temporal.stop()
        if postgres is not None:
            postgres.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True, type=Path,
                        help="the data dir bench/night.py --keep DIR left")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--database-url", default=None,
                        help="a running Postgres holding the nights instead (its DIR not started)")
    args = parser.parse_args()
    if not (args.keep / "pgdata").is_dir() or args.rounds < 1:
        parser.error("--keep must be a directory bench/night.py --keep left; --rounds at least 1")
    raise SystemExit(asyncio.run(main(args.keep, args.rounds, args.database_url)))
