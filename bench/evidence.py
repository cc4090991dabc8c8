"""What checking an answer against its document costs (recon/documents/extraction/evidence.py).

Renders a seeded night's documents in memory (no servers), parses each with the offline parser,
then times `disagreement` alone over all of them, best of `--repeats`:

    uv run python bench/evidence.py [--invoices 20000] [--repeats 5]

Prints microseconds per document for the parse and for the check, and how many documents the
check refused (0 expected: the parser reads the documents right).
"""

from __future__ import annotations

import argparse
import time

from recon.documents.extraction.evidence import disagreement
from recon.documents.extraction.offline import parse_document
from recon.documents.extraction.schema import UnreadableInvoice
from recon.tools.seed import night_chunks
from recon.tools.seed_plan import plan_night


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invoices", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    plan = plan_night("2026-10-13", "ldh", args.invoices, args.invoices // 20, 7)
    documents = [row[4] for chunk in night_chunks(plan) for row in chunk.invoices]
    parsed = []
    best_parse = float("inf")
    for _ in range(args.repeats):
        began = time.perf_counter()
        parsed = []
        for text in documents:
            try:
                parsed.append((parse_document(text), text))
            except UnreadableInvoice:
                pass
        best_parse = min(best_parse, time.perf_counter() - began)
    best_check, refused = float("inf"), 0
    for _ in range(args.repeats):
        began = time.perf_counter()
        refused = sum(1 for found, text in parsed if disagreement(found, text) is not None)
        best_check = min(best_check, time.perf_counter() - began)
    n = len(parsed)
    print(f"documents: {len(documents)} ({n} readable), best of {args.repeats}")
    print(f"parse: {best_parse / len(documents) * 1e6:.1f} us a document")
    print(f"check: {best_check / n * 1e6:.1f} us a document ({best_check:.3f} s for {n})")
    print(f"refused by the check: {refused}")


if __name__ == "__main__":
    main()
