"""How fast each document format is taken in: documents per second, per format.

    uv run python bench/formats.py [--documents N] [--repeats R] [--formats ubl,gst,...]

Starts its own embedded PostgreSQL in a temporary directory, applies the migrations, writes the
seed's suppliers (with their GSTINs and endpoints), and for each format writes N invoice files
with the product's own writers (4 lines each, the seed's mix of goods), then measures, R times
each on fresh invoice numbers:

  read     `recon.documents.formats.detect.read_file` on every file (the importer's parsing:
           PDF text layers and embedded XML included), no database
  import   `recon.documents.importer.import_directory` on the folder: list, read, attribute by
           GSTIN / supplier code, refuse or write in one transaction (the command minus process
           start)
  step 2   what step 2 does with each stored document: the structured reader or the offline
           layout parser, checked as step 2 checks it (no database)

Prints the median (min-max) documents per second of each.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recon.documents.extraction.document_reader import DocumentReader, owns  # noqa: E402
from recon.documents.extraction.offline_extractor import OfflineExtractor  # noqa: E402
from recon.documents.formats import facturx  # noqa: E402
from recon.documents.formats.detect import read_file  # noqa: E402
from recon.documents.formats.pdf_text import write_text_pdf  # noqa: E402
from recon.documents.importer import import_directory  # noqa: E402
from recon.documents.layouts import LAYOUTS, Document, DocumentLine, render  # noqa: E402
from recon.runtime.embedded import EmbeddedPostgres  # noqa: E402
from recon.store import seeding, supplier_ids  # noqa: E402
from recon.store.db import connect_pool, migrate  # noqa: E402
from recon.tools import cii_writer, gst_writer, ubl_writer  # noqa: E402
from recon.tools.seed_formats import seller_of, supplier_id_rows  # noqa: E402
from recon.tools.seed_plan import plan_night  # noqa: E402

FORMATS = ("text", "ubl", "gst", "gst-signed", "cii", "facturx", "pdf")
DAY = "2026-10-13"


def write_file(fmt: str, doc: Document, n: int) -> tuple[str, bytes]:
    seller = seller_of(doc.supplier_id, doc.supplier_name)
    if fmt == "text":
        return f"{doc.invoice_no}.txt", render(doc, LAYOUTS[n % 3]).encode()
    if fmt == "ubl":
        return "invoice.xml", ubl_writer.write(doc, seller).encode()
    if fmt in ("gst", "gst-signed"):
        return "invoice.json", gst_writer.write(doc, seller, signed=fmt == "gst-signed").encode()
    if fmt == "cii":
        return "invoice.xml", cii_writer.write(doc, seller).encode()
    if fmt == "facturx":
        return "invoice.pdf", facturx.write(cii_writer.write(doc, seller), render(doc, "table"))
    if fmt == "pdf":
        return "invoice.pdf", write_text_pdf(render(doc, LAYOUTS[n % 3]))
    raise SystemExit(f"unknown format {fmt}")


def documents(plan, fmt: str, repeat: int, count: int) -> list[tuple[str, bytes]]:
    out = []
    for i in range(count):
        supplier = plan.suppliers[i % len(plan.suppliers)]
        lines = [DocumentLine(sku, desc, 5 + (i + j) % 40, price)
                 for j, (sku, desc, price) in enumerate(plan.catalog[i % 20:i % 20 + 4])]
        doc = Document(f"B{repeat}-{fmt}-{i:06d}", supplier[0], supplier[1], DAY,
                       f"PO-B{repeat}-{i:06d}", lines)
        name, data = write_file(fmt, doc, i)
        stem, dot, ext = name.rpartition(".")
        out.append((f"{i:06d}-{name}" if stem else name, data))
    return out


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


async def measure(pool, plan, fmt: str, count: int, repeats: int, base: Path) -> dict:
    rates: dict[str, list[float]] = {"read": [], "import": [], "step 2": []}
    reader, offline = DocumentReader(), OfflineExtractor()
    for r in range(repeats):
        folder = base / f"{fmt}-{r}"
        folder.mkdir()
        files = documents(plan, fmt, r, count)
        for name, data in files:
            (folder / name).write_bytes(data)
        started = time.perf_counter()
        readings = [read_file(name, data) for name, data in files]
        rates["read"].append(rate(count, time.perf_counter() - started))
        started = time.perf_counter()
        result = await import_directory(pool, folder, DAY, f"b{r}{fmt.replace('-', '')}"[:30])
        rates["import"].append(rate(count, time.perf_counter() - started))
        if result.imported != count:
            raise SystemExit(f"bench bug: {fmt} imported {result.imported} of {count}")
        started = time.perf_counter()
        for file in readings:
            number = file.reading.number if file.reading else ""
            supplier = file.reading.sender.supplier_id or "S001" if file.reading else "S001"
            got = reader.read(number, supplier, file.document) if owns(file.document) else None
            if got is None:
                got = offline.read(number, supplier, file.document)
            got.check_against_source(file.document)
        rates["step 2"].append(rate(count, time.perf_counter() - started))
        shutil.rmtree(folder)
    return rates


async def run(args: argparse.Namespace) -> None:
    state = Path(tempfile.mkdtemp(prefix="recon-bench-"))
    postgres = EmbeddedPostgres(state)
    try:
        print(f"starting embedded Postgres in {state} ...", flush=True)
        url = postgres.start()
        pool = await connect_pool(url, max_size=2)
        try:
            await migrate(pool)
            plan = plan_night(DAY, "bench", 1, 0, 7)
            async with pool.acquire() as conn:
                await seeding.write_suppliers(conn, plan.suppliers)
                await supplier_ids.write_supplier_ids(conn, supplier_id_rows(plan.suppliers))
            print(f"python {platform.python_version()}, {os.cpu_count()} CPUs; {args.documents} "
                  f"documents per format x {args.repeats} repeats", flush=True)
            print(f"{'format':<12}{'read docs/s':>22}{'import docs/s':>22}{'step 2 docs/s':>22}")
            for fmt in args.formats.split(","):
                rates = await measure(pool, plan, fmt, args.documents, args.repeats, state)
                cells = [f"{statistics.median(v):>8,.0f} ({min(v):,.0f}-{max(v):,.0f})"
                         for v in rates.values()]
                print(f"{fmt:<12}" + "".join(f"{c:>22}" for c in cells), flush=True)
        finally:
            await pool.close()
    finally:
        postgres.stop()
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=500, help="documents per format")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per format")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated formats")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
