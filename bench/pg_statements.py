"""Which SQL statements a night costs Postgres: pg_stat_statements over nights run one at a time.

    uv run python bench/pg_statements.py [--warehouses N] [--invoices M] [--rounds K] [--top T]

One embedded stack as bench/warehouses.py starts it (Temporal dev server, embedded Postgres, two
`recon worker` processes), but with pg_stat_statements preloaded (a throwaway setting of this
bench's own server; recon never loads it). N warehouses as bench/warehouses.py sizes them (the
first M invoices, the others a tenth; with N = 1, the default, one night of M = 500 invoices: a
branch night of the twenty-warehouse bench). A warm-up round runs first (not counted: the workers'
first connections and caches), then K rounds, each on a new date, each started together after a
reset of the statistics, which are read as soon as the round finishes (the bench's own queries
are left out). It prints, per night (the round's figures / N): Postgres CPU, statements, their
execution and planning time, and the top statements by total time and by calls. `--nested` also
counts statements run inside functions and triggers (their time is then counted twice: in the
caller and in the nested statement). `--explain FILE` writes the plans of the slow ones.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
import uuid
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cpu import _children, _stat, postmaster_pid, tree_cpu  # noqa: E402
from bench.night_run import quiet_night_environment  # noqa: E402
from bench.warehouses import _settings, exact, fleet, run_nights, settle, warehouses  # noqa: E402
from recon.runtime import pg_settings  # noqa: E402
from recon.runtime.devstack import embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402

FIRST_DATE = date(2031, 5, 1)

# The WAL the round wrote (bytes by position, exact) and its records and full-page images
# (pg_stat_wal: as each backend last reported them, hence the pause before each reading).
_WAL = """
SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::float8 AS bytes, wal_fpi AS fpi, wal_records AS records
FROM pg_stat_wal
"""

_STATEMENTS = """
SELECT calls, total_exec_time AS exec_ms, total_plan_time AS plan_ms, plans, rows,
       regexp_replace(query, '\\s+', ' ', 'g') AS query
  FROM pg_stat_statements
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND query !~* 'pg_stat_statements|pg_stat_database'
"""


def _kinds(pg: int) -> dict[str, float]:
    """CPU seconds of Postgres's processes by kind: the live ones by their title (client backends,
    autovacuum workers, walwriter...), those that exited (in the postmaster's children's time) as
    'exited'."""
    kinds = {"postmaster": _stat(pg), "exited": _stat(pg, with_children=True) - _stat(pg)}
    for child in _children(pg):
        try:
            with open(f"/proc/{child}/cmdline") as f:
                title = f.read().replace("\0", " ").strip()
        except OSError:
            continue
        kind = title.removeprefix("postgres: ").split(" ")[0].rstrip(":")
        if "autovacuum" in title:
            kind = "autovacuum"
        elif not title.startswith("postgres: ") or kind == "postgres":
            kind = "client backends"
        kinds[kind] = kinds.get(kind, 0.0) + _stat(child)
    return kinds


def _short(query: str, width: int) -> str:
    return query if len(query) <= width else query[: width - 1] + "…"


def show(rows: list, nights: int, top: int, width: int) -> None:
    calls = sum(r["calls"] for r in rows)
    exec_ms = sum(r["exec_ms"] for r in rows)
    plan_ms = sum(r["plan_ms"] for r in rows)
    plans = sum(r["plans"] for r in rows)
    print(f"per night: {calls / nights:,.0f} statements ({len(rows)} distinct), execution "
          f"{exec_ms / nights:.0f} ms, planning {plan_ms / nights:.0f} ms in {plans / nights:,.0f} "
          "plans")
    for title, key in (("by total time (exec + plan)", lambda r: r["exec_ms"] + r["plan_ms"]),
                       ("by calls", lambda r: r["calls"])):
        print(f"\ntop {top} {title}, per night:\n{'calls':>8} {'exec ms':>9} {'plan ms':>8} "
              f"{'rows':>8}  statement")
        for r in sorted(rows, key=key, reverse=True)[:top]:
            print(f"{r['calls'] / nights:>8.0f} {r['exec_ms'] / nights:>9.1f} "
                  f"{r['plan_ms'] / nights:>8.1f} {r['rows'] / nights:>8.0f}  "
                  f"{_short(r['query'], width)}")


async def run(args: argparse.Namespace) -> int:
    pg_settings.PG_SETTINGS.update({  # this bench's server only
        "shared_preload_libraries": "pg_stat_statements",
        "pg_stat_statements.track": "all" if args.nested else "top",
        "pg_stat_statements.track_planning": "on",
        "pg_stat_statements.max": "10000"})
    if args.explain:  # the plans of slow statements, with their real rows and times, in the log
        pg_settings.PG_SETTINGS.update({
            "shared_preload_libraries": "pg_stat_statements,auto_explain",
            "auto_explain.log_min_duration": f"{args.explain_ms}ms",
            "auto_explain.log_analyze": "on", "auto_explain.log_buffers": "on",
            "auto_explain.log_nested_statements": "on", "auto_explain.log_triggers": "on",
            "logging_collector": "on", "log_directory": "explain", "log_filename": "pg.log"})
    state = Path(tempfile.mkdtemp(prefix="recon-bench-pgstat-"))
    queue = f"bench-pgstat-{uuid.uuid4().hex[:8]}"
    group = warehouses(args.warehouses, args.invoices)
    if args.warehouses == 1:
        group[0].name = "w02"
    days = [(FIRST_DATE + timedelta(days=d)).isoformat() for d in range(1 + args.rounds)]
    ok = True
    rows: dict[str, dict] = {}
    totals: dict[str, float] = {"cpu": 0.0, "wall": 0.0}
    by_kind: dict[str, float] = {}
    fields = ("calls", "exec_ms", "plan_ms", "plans", "rows")
    try:
        with embedded_stack(state, port=free_port(), ui_port=free_port(), persistent=False) as stack:
            pool = await connect_pool(stack.postgres.url, max_size=2)
            try:
                await migrate(pool)
                await pool.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                client = await connect(stack.settings())
                for day in days:
                    for w in group:
                        await seed_night(pool, day, w.name, w.invoices, w.mismatches, args.seed,
                                         "text")
                pg = postmaster_pid(str(stack.postgres.datadir))
                async with fleet(stack, queue, args.workers):
                    settings = _settings(stack.settings(), queue)
                    for n, day in enumerate(days):
                        await settle(pool)
                        await pool.execute("SELECT pg_stat_statements_reset()")
                        await asyncio.sleep(1.1)  # every backend has reported its WAL figures
                        wal = await pool.fetchrow(_WAL)
                        cpu, t0, kinds = tree_cpu(pg), time.perf_counter(), _kinds(pg)
                        await run_nights(client, settings, day, group, args.timeout)
                        wall, cpu = time.perf_counter() - t0, tree_cpu(pg) - cpu
                        kinds = {kind: seconds - kinds.get(kind, 0.0)
                                 for kind, seconds in _kinds(pg).items()}
                        got_rows = await pool.fetch(_STATEMENTS)
                        await asyncio.sleep(1.1)
                        wal_after = await pool.fetchrow(_WAL)
                        for w in group:
                            ok &= await exact(pool, day, w)
                        if n == 0:
                            continue  # the warm-up round
                        for kind, seconds in kinds.items():
                            by_kind[kind] = by_kind.get(kind, 0.0) + seconds
                        totals["wall"] += wall
                        for f in ("bytes", "fpi", "records"):
                            totals[f"wal {f}"] = totals.get(f"wal {f}", 0) + wal_after[f] - wal[f]
                        totals["cpu"] += cpu
                        for r in got_rows:
                            got = rows.setdefault(r["query"], dict.fromkeys(fields, 0)
                                                  | {"query": r["query"]})
                            for f in fields:
                                got[f] += r[f]
            finally:
                await pool.close()
    finally:
        if args.explain:
            logs = sorted((state / "pgdata" / "explain").glob("*"))
            args.explain.write_text("".join(f.read_text(errors="replace") for f in logs))
        shutil.rmtree(state, ignore_errors=True)
    k = args.rounds * len(group)
    print(f"{len(group)} night(s) together ({', '.join(f'{w.name} {w.invoices:,}' for w in group[:2])}"
          f"{', ...' if len(group) > 2 else ''}), {args.rounds} round(s), {args.workers} workers: "
          f"round wall {totals['wall'] / args.rounds:.2f} s, Postgres CPU "
          f"{totals['cpu'] / args.rounds:.2f} s a round")
    print(f"per night: WAL {totals['wal bytes'] / k / 1e6:.2f} MB, {totals['wal records'] / k:,.0f} "
          f"records, {totals['wal fpi'] / k:,.0f} full-page images")
    print(f"per night: Postgres CPU {totals['cpu'] / k:.3f} s ("
          + ", ".join(f"{kind} {seconds / k:.3f}" for kind, seconds in
                      sorted(by_kind.items(), key=lambda kv: -kv[1]) if seconds > 0) + ")")
    show(list(rows.values()), k, args.top, args.width)
    print(f"\nevery night exact: {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouses", type=int, default=1, help="nights started together")
    parser.add_argument("--invoices", type=int, default=500,
                        help="invoices of the first night (the others: a tenth)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds measured, each on a new date")
    parser.add_argument("--workers", type=int, default=2, help="`recon worker` processes")
    parser.add_argument("--top", type=int, default=25, help="statements listed per ranking")
    parser.add_argument("--width", type=int, default=150, help="characters of each statement shown")
    parser.add_argument("--nested", action="store_true",
                        help="also statements inside functions and triggers")
    parser.add_argument("--explain", type=Path, help="write the plans (auto_explain) of statements "
                        "slower than --explain-ms to this file")
    parser.add_argument("--explain-ms", type=float, default=5, help="see --explain")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated nights")
    parser.add_argument("--timeout", type=float, default=600, help="give up on a night after this")
    args = parser.parse_args()
    if min(args.warehouses, args.invoices, args.rounds, args.workers, args.top) < 1:
        parser.error("--warehouses, --invoices, --rounds, --workers, --top must be at least 1")
    quiet_night_environment()
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
