"""How fast does `recon load` take an ERP export: the real command, in a subprocess, on files
of N PO lines and N receipts.

    uv run python bench/load.py [--lines 100000] [--lines-per-po 4] [--suppliers 200]

Starts its own embedded PostgreSQL in a temporary directory (nothing shared with `recon dev`),
writes suppliers.csv, orders.csv (N lines) and receipts.csv (one receipt per line), and times
`python -m recon.cli load ...` for each file: the first load (everything new), the same file
again (everything unchanged), and for orders a file that amends every line's quantity upwards.
The time is the whole command (interpreter start, reading, checking, COPY, checks against the
books, the writes, commit). Prints wall seconds, rows per second and the command's own CPU
seconds (Postgres not included) for each; on a shared machine the CPU figure moves less.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recon.documents.master_fields import gstin_check_character  # noqa: E402
from recon.runtime.embedded import EmbeddedPostgres  # noqa: E402

DAY = "2026-10-01"


def write_files(folder: Path, lines: int, per_po: int, suppliers: int) -> dict[str, Path]:
    paths = {k: folder / f"{k}.csv" for k in ("suppliers", "orders", "receipts", "amended")}
    with paths["suppliers"].open("w") as out:
        out.write("supplier_id,name,email,gstin\n")
        for s in range(suppliers):
            first14 = f"27AABCB{s:04d}A1Z"
            out.write(f"S{s:04d},Supplier {s} Pvt Ltd,ap{s}@supplier.example,"
                      f"{first14}{gstin_check_character(first14)}\n")
    with paths["orders"].open("w") as orders, paths["amended"].open("w") as amended, \
            paths["receipts"].open("w") as receipts:
        header = "po_number,supplier_id,warehouse,ordered_on,sku,description,qty_ordered,unit_price\n"
        orders.write(header)
        amended.write(header)
        receipts.write("receipt_id,po_number,sku,warehouse,qty_received,received_on\n")
        for i in range(lines):
            po, sku = f"PO/BENCH/{i // per_po:07d}", f"SKU-{1000 + i % per_po}"
            supplier = f"S{(i // per_po) % suppliers:04d}"
            qty, price = 10 + i % 490, f"{100 + i % 9000}.{i % 100:02d}"
            row = f"{po},{supplier},ldh,{DAY},{sku},Goods {i % 97} 1kg,{{qty}},{price}\n"
            orders.write(row.format(qty=qty))
            amended.write(row.format(qty=qty + 5))
            receipts.write(f"GRN-{i:08d},{po},{sku},ldh,{qty},2026-10-05\n")
    return paths


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(env: dict[str, str], kind: str, path: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the command itself (not Postgres), its summary line)."""
    cpu, started = _children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "recon.cli", "load", kind, str(path)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"recon load {kind} failed: {done.stderr.strip()}")
    return seconds, _children_cpu() - cpu, done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--lines-per-po", type=int, default=4)
    parser.add_argument("--suppliers", type=int, default=200)
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="recon-bench-load-"))
    postgres = EmbeddedPostgres(state)
    try:
        url = postgres.start()
        env = {k: v for k, v in os.environ.items() if not k.startswith("RECON_")}
        env.update(DATABASE_URL=url, RECON_HOME=str(state / "home"))
        paths = write_files(state, args.lines, args.lines_per_po, args.suppliers)
        print(f"# {platform.node()} {os.cpu_count()} cores, {args.lines:,} PO lines "
              f"({args.lines_per_po} per PO), {args.suppliers} suppliers")
        runs = [("suppliers", "suppliers", "first", args.suppliers),
                ("orders", "orders", "first", args.lines),
                ("orders", "orders", "again", args.lines),
                ("orders", "amended", "amend", args.lines),
                ("receipts", "receipts", "first", args.lines),
                ("receipts", "receipts", "again", args.lines)]
        for kind, file, label, rows in runs:
            seconds, cpu, summary = timed(env, kind, paths[file])
            print(f"{kind:9} {label:6} {rows:>9,} rows {seconds:6.2f} s {rows / seconds:>9,.0f} rows/s"
                  f"  (command CPU {cpu:5.2f} s)  | {summary.split(': ', 1)[1]}")
    finally:
        postgres.stop()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
