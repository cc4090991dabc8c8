"""Same seed, same results: one seeded night, run to the end, reduced to fingerprints.

Prints a sha256 of the extracted lines, the parked items and the ledger (reference and amount),
so two versions of the code can be compared on the same seed:

    uv run python bench/same_results.py --invoices 5000 --mismatches 250

Run it on each version and compare the three lines; they must be equal.

Since migration 050 the run names invoices by reference (`S001:INV-…`), so every fingerprint
changed with it; `--as-numbers` reads each reference as the seed's bare number before hashing,
which gives the fingerprints of the code before references (the same rows, only renamed).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import re
import shutil
import sys
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recon.runtime.config import MAX_PAISE  # noqa: E402
from recon.runtime.devstack import embedded_stack  # noqa: E402
from recon.runtime.embedded import free_port  # noqa: E402
from recon.runtime.temporal_client import connect  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools.seed import seed_night  # noqa: E402

DAY, WAREHOUSE = "2031-01-01", "ldh"

FINGERPRINTS = {
    "invoice_lines": "SELECT invoice_no, line_no, supplier_id, po_number, sku, description, qty,"
                     " unit_price_paise FROM invoice_lines WHERE workflow_id = $1"
                     " ORDER BY invoice_no, line_no",
    "parked_items": "SELECT item_key, step, reason, evidence FROM parked_items"
                    " WHERE workflow_id = $1 ORDER BY item_key",
    "ledger": "SELECT reference, amount_paise FROM ledger_entries WHERE workflow_id = $1"
              " ORDER BY reference",
}


_SEED_REF = re.compile(r"(?<![A-Za-z0-9_-])S\d{3}:(?=INV-)")  # the seed's S001..S024


def _as_number(value: object) -> object:
    """A seeded night's reference read as its bare number (`S001:INV-…` -> `INV-…`)."""
    return _SEED_REF.sub("", value) if isinstance(value, str) else value


async def main(args: argparse.Namespace) -> None:
    from starter import start_night
    from worker import run_worker

    state = Path(tempfile.mkdtemp(prefix="recon-same-"))
    try:
        with embedded_stack(state, port=free_port(), ui_port=free_port(), persistent=False) as stack:
            pool = await connect_pool(stack.postgres.url, max_size=4)
            await migrate(pool)
            await seed_night(pool, DAY, WAREHOUSE, args.invoices, args.mismatches, args.seed)
            settings = replace(
                stack.settings(), task_queue=f"same-{uuid.uuid4().hex[:8]}", warehouse=WAREHOUSE,
                openai_api_key=None, openai_base_url=None, failpoints="",
                gate_max_parked_ratio=1.0, gate_max_adjustment_share=1.0,
                gate_max_total_paise=MAX_PAISE, gate_max_supplier_paise=MAX_PAISE,
            )
            ready, stop = asyncio.Event(), asyncio.Event()
            worker = asyncio.create_task(run_worker(settings, ready=ready, stop=stop))
            await asyncio.wait_for(ready.wait(), 60)
            client = await connect(stack.settings())
            handle = await start_night(client, settings, DAY, WAREHOUSE)
            result = await handle.result()
            stop.set()
            await worker
            print(f"run {result.status}: {result.invoices} invoices, {result.parked} parked")
            for name, query in FINGERPRINTS.items():
                rows = [tuple(r) for r in await pool.fetch(query, handle.id)]
                if args.as_numbers:
                    rows = sorted(tuple(_as_number(v) for v in r) for r in rows)
                digest = hashlib.sha256(repr(rows).encode()).hexdigest()
                print(f"{name}: {len(rows)} rows sha256 {digest[:16]}")
            await pool.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--invoices", type=int, default=5000)
    parser.add_argument("--mismatches", type=int, default=250)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--as-numbers", action="store_true",
                        help="hash references as the bare numbers of the code before them")
    asyncio.run(main(parser.parse_args()))
