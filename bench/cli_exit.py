"""Does a short CLI command ever abort at interpreter exit?

    uv run python bench/cli_exit.py [--tries N] [--parallel P] [--code DIR]

A command that used a Temporal client could abort while the interpreter finalises
(`Fatal Python error: PyGILState_Release`, exit 134 or 139). This bench starts its own embedded
Temporal dev server and PostgreSQL in a temporary directory, seeds N one-invoice nights (one
warehouse each), and runs `recon run --date D --warehouse W` (no `--wait`) once per night as a
real subprocess, P at a time, on a task queue no worker polls (so each run is started and stays
waiting; all are terminated at the end). It prints how many tries exited 0, how many aborted
(exit code 134/139 or a "Fatal Python error" on stderr) and how many failed otherwise.

`--code DIR` runs the `recon` package found in DIR instead of this checkout (e.g. an export of an
older commit: `git archive COMMIT | tar -x -C /tmp/old`), to measure before and after a change.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recon.runtime.embedded import EmbeddedPostgres, TemporalDevServer, free_port  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402

DAY = "2031-03-03"
QUEUE = "cli-exit-bench-nobody-polls"


@dataclass
class Outcome:
    code: int
    stderr: str

    @property
    def aborted(self) -> bool:
        return self.code in (134, 139, -6, -11) or "Fatal Python error" in self.stderr


def run_once(code_dir: Path, env: dict[str, str], warehouse: str) -> Outcome:
    done = subprocess.run(
        [sys.executable, "-m", "recon.cli", "run", "--date", DAY, "--warehouse", warehouse],
        cwd=code_dir, env=env, capture_output=True, text=True, timeout=120,
    )
    return Outcome(done.returncode, done.stderr)


def run_tries(code_dir: Path, env: dict[str, str], warehouses: list[str],
              parallel: int) -> list[Outcome]:
    """Every night once, `parallel` processes at a time."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(parallel) as pool:
        return list(pool.map(lambda wh: run_once(code_dir, env, wh), warehouses))


async def seed_nights(url: str, warehouses: list[str]) -> None:
    pool = await connect_pool(url)
    try:
        await migrate(pool)
        for wh in warehouses:
            await seed_night(pool, DAY, wh, invoices=1, mismatches=0)
    finally:
        await pool.close()


async def terminate_runs(address: str, warehouses: list[str]) -> None:
    from temporalio.client import Client

    client = await Client.connect(address)
    for wh in warehouses:
        try:
            await client.get_workflow_handle(f"recon-{DAY}-{wh}").terminate("bench done")
        except Exception:  # noqa: BLE001 - a try that failed to start has nothing to terminate
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=50)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--code", type=Path, default=ROOT, help="folder holding the recon package")
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="recon-cli-exit-"))
    postgres = EmbeddedPostgres(state)
    temporal = TemporalDevServer(state, port=free_port(), ui_port=free_port(), persistent=False)
    warehouses = [f"x{n}" for n in range(args.tries)]
    try:
        url = postgres.start()
        temporal.start()
        asyncio.run(seed_nights(url, warehouses))
        env = {k: v for k, v in __import__("os").environ.items()
               if not k.startswith(("RECON_", "OPENAI_"))}
        env.update(DATABASE_URL=url, TEMPORAL_ADDRESS=temporal.address,
                   RECON_HOME=str(state / "home"), RECON_TASK_QUEUE=QUEUE)
        started = time.monotonic()
        outcomes = run_tries(args.code, env, warehouses, args.parallel)
        seconds = time.monotonic() - started
        asyncio.run(terminate_runs(temporal.address, warehouses))
    finally:
        temporal.stop()
        postgres.stop()
        shutil.rmtree(state, ignore_errors=True)
    aborted = [o for o in outcomes if o.aborted]
    failed = [o for o in outcomes if not o.aborted and o.code != 0]
    print(f"code: {args.code}")
    print(f"tries {len(outcomes)} (parallel {args.parallel}, {seconds:.1f} s): "
          f"ok {len(outcomes) - len(aborted) - len(failed)}, aborted {len(aborted)}, "
          f"other failures {len(failed)}")
    codes = sorted({o.code for o in outcomes})
    print(f"exit codes seen: {codes}")
    for o in (aborted + failed)[:3]:
        print(f"--- exit {o.code}: {o.stderr.strip().splitlines()[-1] if o.stderr.strip() else ''}")


if __name__ == "__main__":
    main()
